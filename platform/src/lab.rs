//! The laboratory's identity, one configuration for every place that names the lab: the COA
//! letterhead (results-svc), the ship-to of every label and the label email (shipping-svc), the
//! hosted pay page (gateway) and the COA email. Read from the common `LAB_*` variables
//! ([`LabIdentity::from_env`]); outside development mode every line but the second street line
//! and the signatory role must be set, so a process never prints the demo lab's name or address
//! (docs/operations.md, "The laboratory").

use crate::env::env_var;
use crate::production::Requirements;

/// The variables of the identity, with what each configures (for errors and docs).
pub const VARIABLES: &[(&str, &str)] = &[
    ("LAB_NAME", "the laboratory's legal name"),
    ("LAB_STREET1", "the laboratory's street address"),
    ("LAB_STREET2", "a second address line (optional)"),
    ("LAB_CITY", "the laboratory's city"),
    ("LAB_STATE", "the laboratory's state or region"),
    ("LAB_POSTAL_CODE", "the laboratory's postal code"),
    ("LAB_COUNTRY", "the laboratory's country (ISO 3166-1 alpha-2)"),
    ("LAB_PHONE", "the laboratory's contact telephone"),
    ("LAB_EMAIL", "the laboratory's contact email"),
    ("LAB_ACCREDITATION_BODY", "the accreditation body (e.g. A2LA)"),
    ("LAB_ACCREDITATION_NUMBER", "the accreditation certificate number"),
    (
        "LAB_SIGNATORY_ROLE",
        "the role printed under the name of who authorised a COA (optional)",
    ),
];

/// Who the laboratory is and where it works.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabIdentity {
    /// Legal name, e.g. `Meridian Analytical Laboratories, Inc.`.
    pub name: String,
    pub street1: String,
    /// Empty when the address has one street line.
    pub street2: String,
    pub city: String,
    pub state: String,
    pub postal_code: String,
    /// ISO 3166-1 alpha-2, e.g. `US`.
    pub country: String,
    pub phone: String,
    pub email: String,
    /// E.g. `A2LA`.
    pub accreditation_body: String,
    /// E.g. `4821.01`.
    pub accreditation_number: String,
    /// The role of the signatory who authorises a COA, e.g. `Quality Assurance Manager`.
    pub signatory_role: String,
}

impl LabIdentity {
    /// The demo laboratory of development mode and the tests (fictitious).
    pub fn demo() -> Self {
        Self {
            name: "Meridian Analytical Laboratories, Inc.".to_owned(),
            street1: "1200 Assay Park Drive".to_owned(),
            street2: "Dock 3".to_owned(),
            city: "Madison".to_owned(),
            state: "WI".to_owned(),
            postal_code: "53719".to_owned(),
            country: "US".to_owned(),
            phone: "+1 608 555 0142".to_owned(),
            email: "lab@meridian-labs.example".to_owned(),
            accreditation_body: "A2LA (demo)".to_owned(),
            accreditation_number: "0000.01".to_owned(),
            signatory_role: "Quality Assurance Manager".to_owned(),
        }
    }

    /// Reads the `LAB_*` variables: in development mode an unset one keeps the demo value;
    /// outside it every one but `LAB_STREET2` and `LAB_SIGNATORY_ROLE` must be set, and an unset
    /// `LAB_STREET2` is empty (the demo dock line is never printed under a real street).
    pub fn from_env(need: &mut Requirements) -> Self {
        let demo = Self::demo();
        let required = |need: &mut Requirements, variable: &str, default: &str| {
            let what = VARIABLES
                .iter()
                .find(|(name, _)| *name == variable)
                .map_or("the laboratory's identity", |(_, what)| what);
            need.required(
                variable,
                &format!("{what}, printed on every COA, label and pay page"),
                default,
            )
        };
        let street2 = match env_var("LAB_STREET2") {
            Some(value) => value,
            None if need.dev_mode() => demo.street2.clone(),
            None => String::new(),
        };
        Self {
            name: required(need, "LAB_NAME", &demo.name),
            street1: required(need, "LAB_STREET1", &demo.street1),
            street2,
            city: required(need, "LAB_CITY", &demo.city),
            state: required(need, "LAB_STATE", &demo.state),
            postal_code: required(need, "LAB_POSTAL_CODE", &demo.postal_code),
            country: required(need, "LAB_COUNTRY", &demo.country),
            phone: required(need, "LAB_PHONE", &demo.phone),
            email: required(need, "LAB_EMAIL", &demo.email),
            accreditation_body: required(need, "LAB_ACCREDITATION_BODY", &demo.accreditation_body),
            accreditation_number: required(need, "LAB_ACCREDITATION_NUMBER", &demo.accreditation_number),
            signatory_role: env_var("LAB_SIGNATORY_ROLE").unwrap_or(demo.signatory_role),
        }
    }

    /// The address as printed lines: street lines, then `City, ST 53719`, then the country.
    pub fn address_lines(&self) -> Vec<String> {
        let mut lines = vec![self.street1.clone()];
        if !self.street2.trim().is_empty() {
            lines.push(self.street2.clone());
        }
        lines.push(format!("{}, {} {}", self.city, self.state, self.postal_code));
        lines.push(self.country.clone());
        lines
    }

    /// The address on one line.
    pub fn address_line(&self) -> String {
        self.address_lines().join(", ")
    }

    /// The accreditation statement, e.g. `ISO/IEC 17025:2017 accredited by A2LA, certificate 4821.01`.
    pub fn accreditation(&self) -> String {
        format!(
            "ISO/IEC 17025:2017 accredited by {}, certificate {}",
            self.accreditation_body, self.accreditation_number
        )
    }

    /// The contact line, e.g. `+1 608 555 0142 · lab@example.com`.
    pub fn contact(&self) -> String {
        format!("{} - {}", self.phone, self.email)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_identity_prints_one_consistent_name_address_and_accreditation() {
        let lab = LabIdentity::demo();
        assert_eq!(
            lab.address_line(),
            "1200 Assay Park Drive, Dock 3, Madison, WI 53719, US"
        );
        assert_eq!(
            lab.accreditation(),
            "ISO/IEC 17025:2017 accredited by A2LA (demo), certificate 0000.01"
        );
        let one_street = LabIdentity {
            street2: String::new(),
            ..lab
        };
        assert_eq!(one_street.address_lines().len(), 3);
    }
}
