//! What a process needs before it may run outside development mode.
//!
//! The sandbox (the built-in card processor that takes test cards, the sandbox carrier, the demo
//! bank account and lab address, loopback links and webhook targets) and every development
//! secret exist for `LAB_DEV_MODE=1` only. Outside it, a process reads its settings through a
//! [`Requirements`] collector: every setting that has a sandbox default must be set explicitly,
//! sandbox choices are refused outright, secrets must be long enough and must not be a value
//! committed to this repository ([`COMMITTED_SECRET_SHA256`]), and links are built from an
//! explicitly configured public HTTPS site URL ([`Requirements::site_url`]). The process then
//! refuses to start with one error that names every variable at fault.

use crate::env::{DEV_MODE_VAR, env_var};
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

/// The common setting of the public site root (`https://lab.example.com`): every absolute link
/// the mesh hands out (pay page, label, COA PDF, verification) starts with it. A process may
/// override it with `<PREFIX>_SITE_URL`.
pub const SITE_URL_VAR: &str = "SITE_URL";
/// The site root of development mode when none is configured (labd's default listener).
pub const DEVELOPMENT_SITE_URL: &str = "http://127.0.0.1:8080";
/// Fewest characters of a secret the mesh itself keys with (API-key pepper, label-link key).
pub const MIN_SECRET_CHARS: usize = 32;

/// SHA-256 (hex) of every secret value committed to this repository: the development overlay's
/// generated Secrets and Redis users (`deploy/k8s/overlays/dev`), the compose file's database
/// password, and the development values in the code. A setting whose value, or any secret part
/// of it ([`secret_parts`]), hashes to one of these is refused outside development mode.
/// `platform/tests/committed_secrets.rs` scans the repository and fails when a committed secret
/// is missing here (it prints the line to add).
pub const COMMITTED_SECRET_SHA256: &[&str] = &[
    "307f0b0a0d2de237e02e997e801c2f236e2a7b3aea5a429a826e21274fd5a074", // shipping-svc/tests/api/carrier_double.rs API_KEY
    "583383dcd42b679b8f8f741181e57589c3c0fa2b5ead69ddaac510874a288542", // deploy/docker/compose.yaml MINIO_ROOT_PASSWORD
    "bd9e059adf75ff040c77b2ce4276d0a230381bdebc8134714e14149b3f16b499", // deploy/docker/compose.yaml MC_HOST_local
    "a2832b8cf1fa925dcdb6c41b796b8327da765f8b6b3e55573384e4bf872ffb47", // deploy/docker/compose.yaml AWS_ACCESS_KEY_ID
    "326bd0800ed1e5271cc8494dc955eafc698acf47df952aeffe5b10e271cd3400", // deploy/k8s/overlays/dev/kustomization.yaml identity-svc
    "44ad9aae17915923f3d563adf3bb8e408a218635781766a78d22a2ddcb00e268", // deploy/k8s/overlays/dev/kustomization.yaml identity-svc
    "a4f066464611cf971333c7e3f4891b6744847279f008a138e31c254908c9782b", // deploy/k8s/overlays/dev/kustomization.yaml identity-svc
    "bd852c5890646063841f499d6710d502908db713883e4f0512374a9a615ab458", // deploy/k8s/overlays/dev/kustomization.yaml identity-svc
    "17d5c931f0d461b244525f59f267f049325bf6737d12a3ad67b1cb094a18287e", // deploy/k8s/overlays/dev/kustomization.yaml identity-svc
    "c2b2284ffcebbd27d1e0e68fd5fd55d1488e4029f2fb7f035169913af38f4ef6", // deploy/k8s/overlays/dev/kustomization.yaml identity-svc
    "dcf4551498f7f4eea127589b0b220e4ed6e1494fa40021206925ecc4ef3d508c", // deploy/k8s/overlays/dev/kustomization.yaml catalog-svc
    "fbff34e24a3adb0207cd0da043370e3d0449763422ccb3379a0750d909251a00", // deploy/k8s/overlays/dev/kustomization.yaml catalog-svc
    "2dfe01c8eb1ed75a2f8d43f982aae73268437560e1074e16a3ddf1b283042710", // deploy/k8s/overlays/dev/kustomization.yaml payments-svc
    "bdc94c50138d1c1e3e209f01268275fe1e58aa3edf61009ebaf58f66c5d56b18", // deploy/k8s/overlays/dev/kustomization.yaml payments-svc
    "2af0952c9ad2343ee7528064b166ced7a2c731e935537ad403767c03116eadf7", // deploy/k8s/overlays/dev/kustomization.yaml results-svc
    "81f6dd6a9967f9bcec49c8dfb0c647dd291ae9543201c8ba0e680d94e32dd62c", // deploy/k8s/overlays/dev/kustomization.yaml results-svc
    "62fbbf55c67c46a191d152bf487822d8dd0f4726235eee679fc73a6e024b7768", // deploy/k8s/overlays/dev/kustomization.yaml LAB_API_KEY_PEPPER
    "c76524b9dd2bbc0c1c38fc3d5dce6e6c20026ebf593544e028830c4680fac0e2", // deploy/k8s/overlays/dev/kustomization.yaml WEBHOOKS_SECRET_KEYS
    "25a7bbce3deea9b5220bb9daf030b6cef19c5259009e55047cce61525a1faa25", // deploy/k8s/overlays/dev/kustomization.yaml WEBHOOKS_SECRET_KEYS
    "0b81243583d872928bf944a082145a2b7a484aedb23f71c54267c5ddf5e48bf7", // deploy/k8s/overlays/dev/kustomization.yaml SHIPPING_SIGNING_KEY
    "b33bf76275f628c097a7d0ffbd4e9d4e61f58c6b416d2e852ef62f3ebeac9b2a", // deploy/k8s/overlays/dev/kustomization.yaml gateway
    "acb48d02a5dd4f1b7abf23a53922ab63da8d260b100ba08b0ab0d714ff13457a", // deploy/k8s/overlays/dev/kustomization.yaml gateway
    "d2f3788310ec3f674a35b5d6fc3f6e91a5c14b354ff764a01060b030d4a7ecb8", // deploy/k8s/overlays/dev/kustomization.yaml catalog-svc
    "941cac7498a05d2c52701ec407eb3dea1f4c57ea0cd0abedb53355367fefdac7", // deploy/k8s/overlays/dev/kustomization.yaml catalog-svc
    "2f842d2d4b303b147870e4aea76a7efc72a8dd1b132a30abdacf32a11f171e9a", // deploy/k8s/overlays/dev/kustomization.yaml orders-svc
    "448c15ad458bc9d779e86e786f24b8c06b6246763691fc9fea9e5125dc615d81", // deploy/k8s/overlays/dev/kustomization.yaml orders-svc
    "238c75a4de2d23e72595ed6e76fd0abde0cd76778f01a6e72d05cf0048426dc3", // deploy/k8s/overlays/dev/kustomization.yaml payments-svc
    "c65b1d76509287f2dc7cc0ede78877c96917b4e2c00724519458eef4f4323567", // deploy/k8s/overlays/dev/kustomization.yaml payments-svc
    "20373bf64cf3cd784490d2efa3306b779d52fb1c8610bfea9e78e96ac2b7d49d", // deploy/k8s/overlays/dev/kustomization.yaml shipping-svc
    "f9cf52bc9dc05d30ba70b870aae9bab672f303c9aed09db0a6e4f420adeded7f", // deploy/k8s/overlays/dev/kustomization.yaml shipping-svc
    "4fc5e4c798095a1a59a75710f1299f93ed0b0935c5070262ca110dfd043809c7", // deploy/k8s/overlays/dev/kustomization.yaml results-svc
    "be5725bb857ea6b04861aa6bfc093f508a779d6fb8d6dda04dcad27d1db09bf8", // deploy/k8s/overlays/dev/kustomization.yaml results-svc
    "bfe5ba4f9f96e07634d932dcb00dbdbd1a8cf925e987308e497c4726fe351a6c", // deploy/k8s/overlays/dev/kustomization.yaml webhooks-svc
    "0a28376fdf8eca4136eeb76556e63eebd87bb14f5bee664f5f3865774ace57ff", // deploy/k8s/overlays/dev/kustomization.yaml webhooks-svc
    "1ce632f0fb0838b99a9b48a03e92bffa63c4d34cd38e2a107969a738b4afe6c5", // deploy/k8s/overlays/dev/kustomization.yaml admin-url
    "a51146d38077ff992eba84cf1d5e9b249073503eb74868699016153b031a38f7", // deploy/k8s/overlays/dev/kustomization.yaml admin-url
    "9726b14ca7dec461b1ea6ac9eff6033c944c8a0c97bd807d7429836dc6f007cb", // deploy/k8s/overlays/dev/kustomization.yaml gateway
    "4b70b510cc47c8fa5b4502143df1a579ea0891bcb6fe93f2df04bc9a0b6d836f", // deploy/k8s/overlays/dev/kustomization.yaml gateway
    "98b85b69efd83029e327443526ef176cfab5c5be781480238071754d7d800993", // deploy/k8s/overlays/dev/kustomization.yaml catalog-svc
    "1b800d3cf0acc6a97b23d34d6bafe8d8925bdd64104ddc922df1190bbee43288", // deploy/k8s/overlays/dev/kustomization.yaml catalog-svc
    "0c59aedc8237b43e087e9ec7454c6be37dd1b6250cc02c97c6c588b00f518d7e", // deploy/k8s/overlays/dev/kustomization.yaml orders-svc
    "416450839534c0c31167ea268007fd3f10a773f9449582c993d84cf7aef3c8c5", // deploy/k8s/overlays/dev/kustomization.yaml orders-svc
    "a94cf7b717086b0bbaf70f7287993e03e9a28291b752c6287649a05ee4542636", // deploy/k8s/overlays/dev/kustomization.yaml payments-svc
    "5e9c803d3a67723fd96516919018059f723dc9df0cbfcc1ff5339d0b84b826a7", // deploy/k8s/overlays/dev/kustomization.yaml payments-svc
    "8786925b4f3924c5f981494b915ead99a4a32bcec262bfbc9e3a73d790f8a770", // deploy/k8s/overlays/dev/kustomization.yaml shipping-svc
    "1054643512d7f9657467b4d51f429031baed2a6ae9260729da61f054f4b8a271", // deploy/k8s/overlays/dev/kustomization.yaml shipping-svc
    "e4843889f78866ac41d86d5a87dfc3a5075f41ff08c9869b97e1528a63d264eb", // deploy/k8s/overlays/dev/kustomization.yaml results-svc
    "7d38be235f101236f03db20d16298f8bca62c69fca77cdf704d170ef79a83fad", // deploy/k8s/overlays/dev/kustomization.yaml results-svc
    "6193fd316d3f1145dc35481ad835c34e24142def953821fbbb8e5e1d54e92d1f", // deploy/k8s/overlays/dev/kustomization.yaml webhooks-svc
    "3138581615deae922a5d2624a798cec76d7a604d16c708ef7e501a5722dc4368", // deploy/k8s/overlays/dev/kustomization.yaml webhooks-svc
    "c8885fe4708e9942f1f73416bd9db2d63b519a9da1f254bce965f22d088c12a6", // deploy/k8s/overlays/dev/kustomization.yaml gateway
    "dfc6a5bf9e691610923bd095e1eb2c599d9ae4d93f1872a00bf90297930354c0", // deploy/k8s/overlays/dev/kustomization.yaml gateway
    "2011fa0c75e015d839ca9eed2324afb91afa6f0e98b1f046a8903ea5b87d7680", // deploy/k8s/overlays/dev/kustomization.yaml orders-svc
    "08463885341f8b111f10cea69524f3b48f5a2dcf000d5c18d874320a3027eca7", // deploy/k8s/overlays/dev/kustomization.yaml orders-svc
    "4f6044a5116863802b034a57fa3410558b76624aecb42ef5f4471cf943a380a8", // deploy/k8s/overlays/dev/kustomization.yaml shipping-svc
    "694574af1d537729e9a20a5fd7b4b9b5d796a8e1cbc8a0459d519b1d741f7030", // deploy/k8s/overlays/dev/kustomization.yaml shipping-svc
    "6a7dd33e74b80c9315c07bafa1e865918fb7d29198eca05be1e8063507ea771f", // deploy/k8s/overlays/dev/kustomization.yaml results-svc-coa
    "4139b98fcb3f491e82083fb1f92f4a1eb229fff2df5d14fa470d29ff61a0f86a", // deploy/k8s/overlays/dev/kustomization.yaml results-svc-coa
    "c0b616e1a71b89ef902a872c60b3f4d2b1541e94abbc49fa73be82b6ba025551", // deploy/k8s/overlays/dev/redis-users.acl
    "41dda645c91b317892efe00b43a220cead5499c3c15686ca0811af356f63832b", // deploy/k8s/overlays/dev/redis-users.acl
    "3f5809c3229f2e2b0d237709b27288fa2d6c551c26f1920e1bad59858b355238", // gateway/src/config.rs DEV_API_KEY_PEPPER
    "af59fe6add9ded0d91169935882fff034f72a9c82f3480feb1220dcb9dd324ce", // gateway/src/domain/operator.rs DEV_OPERATOR_CREDENTIAL
    "70be56f71dbda4aa46a46a265d87f86a2932736e34b8730050fd163e1b07876c", // gateway/tests/api/webhook_fake.rs CREATED_SECRET
    "68dce44705914671643832364878ca7ab33d1dfea929e80481a92f40835f0ece", // gateway/tests/api/webhook_fake.rs ROTATED_SECRET
    "b188cbc9cf0ba64de4f9533207489ce783e4703ea2a93974b3871b821bd396f0", // platform/src/label_links.rs DEVELOPMENT_KEY
    "d0b38b31f96ba7ee9d308544657fc2d4d38c461088765788430abc40a58b7ab3", // platform/src/blobs/settings.rs DEVELOPMENT_DOWNLOAD_URL_KEY
    "fc7322439f75eb4495fe7fa5a54b0bf6b87d0dea97e339735fee056c9b42f1c4", // platform/src/testing/s3rver.rs S3RVER_CREDENTIAL
    "9ae75bdff795744a11779b936ccc46257e8b9f40a2f5056ac2c10721ad0129cb", // platform/src/testing/ministack.rs MINISTACK_SECRET_ACCESS_KEY
    "a9b7a0dc83b1e36eacf64aba833d30b8a80cfa3b51662d7d13a65a57c6bb41d9", // platform/src/blobs/settings_tests.rs KEY
    "9502cad44baf8fc7535c347cdbe867016d950782c228db4c7e9790bf60e0ece3", // payments-svc/tests/api/spend.rs KEY
    "ebb2542340758ab364336e70682c357bcf9b5f9d49a3f55ffe8b0c2dcf4b438c", // webhooks-svc/src/keyring.rs DEVELOPMENT_KEY
    "57691871881679ee14259ebd2810395f2d51aa43c307fcd8ced94b65a761dead", // deploy/k8s/overlays/dev/kustomization.yaml RESULTS_UNSUBSCRIBE_KEY
    "94d68549ef63d66cf4867666936045b87fa623feee67f8bee2af6966109eb541", // results-svc/src/lib.rs DEVELOPMENT_UNSUBSCRIBE_KEY
    "af7a23f0b3b1bd3cbfa3441df28bbaa88a9260d3ce23c2e1b7b9da61e88bc06f", // tests/src/easypost.rs API_KEY
    "dbc6b1a0b592c9eec5155e676335e545830cd1450ffbdde41ad04ccf9af5dd45", // tests/src/easypost.rs WEBHOOK_SECRET
    "4fd495f222e8aae942d67eb65e04e0b0d906a161db5fd4d3b9c5753ba80e86b9", // tests/tests/e2e/card_psp.rs SECRET_KEY
    "d3cce94793578c0857e433bccc5816364f7037b62877fe0edd15e2972401e646", // tests/tests/e2e/card_psp.rs WEBHOOK_SECRET
];

/// The secret parts of a setting's value, each of which must not be a committed secret: the
/// value itself, the password of a URL (`postgres://user:password@host`), the private part `d`
/// of a JSON Web Key, and each key of a keyring (`kid:base64,kid:base64`).
pub fn secret_parts(value: &str) -> Vec<String> {
    let value = value.trim();
    let mut parts = vec![value.to_owned()];
    if let Ok(serde_json::Value::Object(jwk)) = serde_json::from_str::<serde_json::Value>(value) {
        if let Some(serde_json::Value::String(d)) = jwk.get("d") {
            parts.push(d.clone());
        }
        return parts;
    }
    if value.contains("://") {
        parts.extend(url_password(value));
        return parts;
    }
    for entry in value.split(',') {
        if let Some((_, key)) = entry.trim().split_once(':')
            && !key.is_empty()
        {
            parts.push(key.trim().to_owned());
        }
    }
    parts
}

/// The password of `scheme://user:password@host…`, if the value is such a URL.
fn url_password(value: &str) -> Option<String> {
    let (scheme, rest) = value.split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
    {
        return None;
    }
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let (user_info, _) = authority.rsplit_once('@')?;
    let (_, password) = user_info.split_once(':')?;
    (!password.is_empty()).then(|| password.to_owned())
}

/// SHA-256 of `bytes` (text or a file's content), lower-case hex.
pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    hex::encode(Sha256::digest(bytes.as_ref()))
}

/// True when `value`, or a secret part of it, is a secret committed to this repository.
pub fn is_committed_secret(value: &str) -> bool {
    secret_parts(value)
        .iter()
        .any(|part| COMMITTED_SECRET_SHA256.contains(&sha256_hex(part).as_str()))
}

/// Collects what a process lacks to run outside development mode; in development mode it
/// answers the development defaults and collects nothing.
#[derive(Debug)]
pub struct Requirements {
    process: String,
    dev_mode: bool,
    problems: Vec<String>,
}

impl Requirements {
    /// The requirements of `process` (its service name, for the error).
    pub fn new(process: &str, dev_mode: bool) -> Self {
        Self {
            process: process.to_owned(),
            dev_mode,
            problems: Vec::new(),
        }
    }

    /// Whether development mode is on.
    pub fn dev_mode(&self) -> bool {
        self.dev_mode
    }

    /// Records a problem (outside development mode only): `message` names the variable.
    pub fn refuse(&mut self, message: impl Into<String>) {
        if !self.dev_mode {
            self.problems.push(message.into());
        }
    }

    /// Refuses when `condition` holds (outside development mode only).
    pub fn refuse_if(&mut self, condition: bool, message: impl FnOnce() -> String) {
        if condition {
            self.refuse(message());
        }
    }

    /// The value of `variable`, which must be set outside development mode (`what` says what it
    /// configures); in development mode an unset variable answers `development_default`.
    pub fn required(&mut self, variable: &str, what: &str, development_default: &str) -> String {
        match env_var(variable) {
            Some(value) => value,
            None => {
                self.refuse(format!("{variable} is not set: {what}"));
                development_default.to_owned()
            }
        }
    }

    /// Checks a secret setting outside development mode: it must not be a value committed to
    /// this repository, and, when `min_chars` is given, must have at least that many characters.
    pub fn secret(&mut self, variable: &str, value: Option<&SecretString>, min_chars: Option<usize>) {
        let Some(value) = value else { return };
        let text = value.expose_secret();
        if is_committed_secret(text) {
            self.refuse(format!(
                "{variable} is a value committed to the repository (a development secret): generate a real one"
            ));
        } else if let Some(min) = min_chars
            && text.trim().chars().count() < min
        {
            self.refuse(format!("{variable} is shorter than {min} characters"));
        }
    }

    /// The public site root: `<prefix>_SITE_URL`, else `SITE_URL`, without a trailing slash.
    /// Outside development mode it must be set, and be an `https` URL of a public host name with
    /// no path, query or credentials; in development mode it defaults to
    /// [`DEVELOPMENT_SITE_URL`].
    pub fn site_url(&mut self, prefix: &str) -> String {
        let own = format!("{prefix}_{SITE_URL_VAR}");
        let (variable, value) = match env_var(&own) {
            Some(value) => (own, value),
            None => (
                SITE_URL_VAR.to_owned(),
                match env_var(SITE_URL_VAR) {
                    Some(value) => value,
                    None => {
                        self.refuse(format!(
                        "{SITE_URL_VAR} (or {own}) is not set: the public https root every link is built from, e.g. https://lab.example.com"
                    ));
                        return DEVELOPMENT_SITE_URL.to_owned();
                    }
                },
            ),
        };
        let value = value.trim().trim_end_matches('/').to_owned();
        if let Err(problem) = public_site_url(&value) {
            self.refuse(format!("{variable}={value:?} {problem}"));
        }
        value
    }

    /// Fails with every problem found, naming the process and how to run it locally instead.
    pub fn finish(self) -> anyhow::Result<()> {
        if self.problems.is_empty() {
            return Ok(());
        }
        let mut message = format!(
            "{} refuses to start outside development mode ({DEV_MODE_VAR}=1 is for local development only):",
            self.process
        );
        for problem in &self.problems {
            message.push_str("\n  - ");
            message.push_str(problem);
        }
        anyhow::bail!(message)
    }
}

/// Why `url` is not a public HTTPS site root (`Ok` when it is one).
pub fn public_site_url(url: &str) -> Result<(), &'static str> {
    let uri: http::Uri = url.parse().map_err(|_| "is not a URL")?;
    if uri.scheme_str() != Some("https") {
        return Err("must be an https URL");
    }
    let authority = uri.authority().ok_or("names no host")?;
    if authority.as_str().contains('@') {
        return Err("must not carry credentials");
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err("must be a site root (no path or query)");
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let local_name = host == "localhost" || host.ends_with(".localhost") || !host.contains(['.', ':']);
    let local_address = host
        .parse::<std::net::IpAddr>()
        .is_ok_and(|address| match address {
            std::net::IpAddr::V4(v4) => {
                v4.is_loopback() || v4.is_unspecified() || v4.is_private() || v4.is_link_local()
            }
            std::net::IpAddr::V6(v6) => v6.is_loopback() || v6.is_unspecified(),
        });
    if local_name || local_address {
        return Err("must name a public host, not a loopback, private or single-label one");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_https_site_roots_are_accepted() {
        assert!(public_site_url("https://lab.example.com").is_ok());
        assert!(public_site_url("https://lab.example.com:8443").is_ok());
        for refused in [
            "http://lab.example.com",
            "https://127.0.0.1:8080",
            "https://localhost",
            "https://api.localhost",
            "https://10.1.2.3",
            "https://[::1]",
            "https://intranet",
            "https://lab.example.com/shop",
            "https://lab.example.com/?a=b",
            "https://user:pw@lab.example.com",
            "lab.example.com",
        ] {
            assert!(public_site_url(refused).is_err(), "{refused} was accepted");
        }
    }

    #[test]
    fn secret_parts_are_the_value_a_url_password_a_jwk_private_part_and_keyring_keys() {
        assert_eq!(
            secret_parts("postgres://lab_orders:s3cret@postgres:5432/lab"),
            vec![
                "postgres://lab_orders:s3cret@postgres:5432/lab".to_owned(),
                "s3cret".to_owned()
            ]
        );
        assert_eq!(
            secret_parts(r#"{"kty":"OKP","d":"private-seed","x":"public"}"#)[1],
            "private-seed"
        );
        assert_eq!(
            secret_parts("k1:AAAA,k2:BBBB"),
            vec!["k1:AAAA,k2:BBBB".to_owned(), "AAAA".to_owned(), "BBBB".to_owned()]
        );
        assert_eq!(secret_parts("plain"), vec!["plain".to_owned()]);
        assert_eq!(
            secret_parts("redis://redis:6379"),
            vec!["redis://redis:6379".to_owned()]
        );
    }

    #[test]
    fn outside_development_mode_every_problem_is_named_in_one_error() {
        let mut requirements = Requirements::new("payments-svc", false);
        requirements.refuse("PAYMENTS_CARD_PROCESSOR is not set");
        requirements.secret("LAB_API_KEY_PEPPER", Some(&SecretString::from("short")), Some(32));
        let error = requirements.finish().unwrap_err().to_string();
        assert!(
            error.starts_with("payments-svc refuses to start outside development mode"),
            "{error}"
        );
        assert!(error.contains("PAYMENTS_CARD_PROCESSOR is not set"), "{error}");
        assert!(
            error.contains("LAB_API_KEY_PEPPER is shorter than 32 characters"),
            "{error}"
        );
    }

    #[test]
    fn development_mode_collects_nothing() {
        let mut requirements = Requirements::new("payments-svc", true);
        requirements.refuse("anything");
        requirements.secret("X", Some(&SecretString::from("short")), Some(32));
        assert!(requirements.finish().is_ok());
    }
}
