//! A throw-away certificate authority for tests of TLS connections (`rediss://`, gRPC with
//! client certificates): PEM certificates and keys for servers and clients, signed by a CA made
//! with `rcgen` for one test.

/// A certificate and its private key, PEM.
#[derive(Clone, Debug)]
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
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

    /// A server certificate for `names` (host names or IP addresses).
    pub fn server(&self, names: &[&str]) -> Issued {
        self.issue(
            names,
            names.first().copied().unwrap_or("server"),
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    /// A client certificate whose common name is `name`.
    pub fn client(&self, name: &str) -> Issued {
        self.issue(&[name], name, rcgen::ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn issue(&self, names: &[&str], common_name: &str, usage: rcgen::ExtendedKeyUsagePurpose) -> Issued {
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let mut params = rcgen::CertificateParams::new(names).expect("leaf parameters");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, common_name);
        params.extended_key_usages = vec![usage];
        let key = rcgen::KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &self.ca).expect("leaf certificate");
        Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}
