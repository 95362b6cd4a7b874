#!/usr/bin/env python3
"""Independent cross-check of the values results-svc/tests/formats.rs expects.

Reads the test files with the Python standard library and numpy, not with the Rust parsers:
mzML chromatograms through ElementTree + base64 + numpy.frombuffer, the ANDI netCDF-3 peak
table through scipy.io.netcdf_file when scipy is installed (else prints the CDL values).
Run: python3 crosscheck.py  (needs numpy; pip install numpy)
"""
import base64
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
NS = {"m": "http://psi.hupo.org/ms/mzml"}


def array_of(binary_data_array):
    accessions = {p.get("accession"): p for p in binary_data_array.findall("m:cvParam", NS)}
    dtype = "<f8" if "MS:1000523" in accessions else "<f4"
    raw = base64.b64decode(binary_data_array.find("m:binary", NS).text or "")
    if "MS:1000574" in accessions:  # zlib compression
        raw = zlib.decompress(raw)
    unit = None
    for p in accessions.values():
        if p.get("unitName"):
            unit = p.get("unitName")
    kind = "time" if "MS:1000595" in accessions else "intensity" if "MS:1000515" in accessions else "?"
    return kind, unit, np.frombuffer(raw, dtype=dtype).astype(np.float64)


def mzml():
    root = ET.parse(HERE / "mini.chrom.mzML").getroot()
    for chromatogram in root.iter("{http://psi.hupo.org/ms/mzml}chromatogram"):
        arrays = {}
        for bda in chromatogram.iter("{http://psi.hupo.org/ms/mzml}binaryDataArray"):
            kind, unit, values = array_of(bda)
            arrays[kind] = (unit, values)
        time_unit, time = arrays["time"]
        _, intensity = arrays["intensity"]
        minutes = time / 60.0 if time_unit == "second" else time
        apex = minutes[int(np.argmax(intensity))]
        # Trapezoid over the whole trace, baseline 0, time in minutes.
        area = float(np.sum((minutes[1:] - minutes[:-1]) * (intensity[1:] + intensity[:-1]) / 2.0))
        q1 = chromatogram.find("m:precursor/m:selectedIonList/m:selectedIon/m:cvParam[@accession='MS:1000744']", NS)
        q3 = chromatogram.find("m:product/m:isolationWindow/m:cvParam[@accession='MS:1000827']", NS)
        print(
            f"{chromatogram.get('id')}: n={len(time)} Q1={q1.get('value')} Q3={q3.get('value')} "
            f"apex_min={apex!r} area_counts_min={area!r} max={intensity.max()!r}"
        )


def andi():
    try:
        from scipy.io import netcdf_file
    except ImportError:
        print("scipy not installed: ANDI values from andi_chrom_valid.cdl (sciformats) instead")
        return
    with netcdf_file(HERE / "andi_chrom_valid.cdf", "r", mmap=False) as f:
        names = [b"".join(row).decode().rstrip("\x00") for row in f.variables["peak_name"][:]]
        rt = f.variables["peak_retention_time"][:].astype(np.float64)
        print("peak_name", names)
        print("peak_retention_time_min", list(rt / 60.0))
        print("peak_area", list(f.variables["peak_area"][:]))
        print("peak_amount (f32)", [str(np.float32(v)) for v in f.variables["peak_amount"][:]])
        for key in ("sample_name", "injection_date_time_stamp", "detector_name", "peak_amount_unit"):
            print(key, f._attributes.get(key))


if __name__ == "__main__":
    mzml()
    andi()
    sys.exit(0)
