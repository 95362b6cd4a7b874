//! A throw-away certificate authority for tests of TLS connections (`rediss://`, gRPC with
//! client certificates): PEM certificates and keys for servers and clients, signed by a CA made
//! with `rcgen` for one test.

/// The usages of a mesh process's certificate (`GRPC_TLS_CERT_FILE`).
const PEER_USAGES: [rcgen::ExtendedKeyUsagePurpose; 2] = [
    rcgen::ExtendedKeyUsagePurpose::ServerAuth,
    rcgen::ExtendedKeyUsagePurpose::ClientAuth,
];

/// A certificate and its private key, PEM.
#[derive(Clone, Debug)]
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
}

impl Issued {
    /// Writes the certificate and key to `<dir>/<stem>.crt` and `<dir>/<stem>.key` and returns
    /// their paths.
    pub fn write(&self, dir: &std::path::Path, stem: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let (cert, key) = (dir.join(format!("{stem}.crt")), dir.join(format!("{stem}.key")));
        std::fs::write(&cert, &self.cert_pem).expect("the certificate is written");
        std::fs::write(&key, &self.key_pem).expect("the key is written");
        (cert, key)
    }
}

/// A test CA.
pub struct TestPki {
    ca: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl TestPki {
    /// A fresh CA named `name`.
    pub fn new(name: &str) -> Self {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let key = rcgen::KeyPair::generate().expect("CA key");
        Self {
            ca: rcgen::CertifiedIssuer::self_signed(params, key).expect("CA certificate"),
        }
    }

    /// The CA's certificate, PEM (what clients and servers trust).
    pub fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// Writes the CA's certificate to `path` (a CA bundle of one).
    pub fn write_ca(&self, path: &std::path::Path) {
        std::fs::write(path, self.ca_pem()).expect("the CA certificate is written");
    }

    /// A server certificate for `names` (host names or IP addresses).
    pub fn server(&self, names: &[&str]) -> Issued {
        self.issue(
            names,
            names.first().copied().unwrap_or("server"),
            &[rcgen::ExtendedKeyUsagePurpose::ServerAuth],
            None,
        )
    }

    /// A client certificate whose common name is `name`.
    pub fn client(&self, name: &str) -> Issued {
        self.issue(&[name], name, &[rcgen::ExtendedKeyUsagePurpose::ClientAuth], None)
    }

    /// A certificate of a process of the mesh, which serves and calls with it: both usages,
    /// `names` (host names or IP addresses) as its subject alternative names.
    pub fn peer(&self, names: &[&str]) -> Issued {
        self.issue(
            names,
            names.first().copied().unwrap_or("peer"),
            &PEER_USAGES,
            None,
        )
    }

    /// [`Self::peer`] valid until midnight UTC of `(year, month, day)` (in the past: expired).
    pub fn peer_until(&self, names: &[&str], not_after: (i32, u8, u8)) -> Issued {
        self.issue(
            names,
            names.first().copied().unwrap_or("peer"),
            &PEER_USAGES,
            Some(not_after),
        )
    }

    fn issue(
        &self,
        names: &[&str],
        common_name: &str,
        usages: &[rcgen::ExtendedKeyUsagePurpose],
        not_after: Option<(i32, u8, u8)>,
    ) -> Issued {
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let mut params = rcgen::CertificateParams::new(names).expect("leaf parameters");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, common_name);
        params.extended_key_usages = usages.to_vec();
        if let Some((year, month, day)) = not_after {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(year, month, day);
        }
        let key = rcgen::KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &self.ca).expect("leaf certificate");
        Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}
