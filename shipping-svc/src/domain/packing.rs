//! Packing steps derived from the catalog's sample requirements of an order's sample lines.
//!
//! Rules (documented in `docs/shipping.md`):
//! 1. Per sample line, tests that ask for the same container share one container; its quantity
//!    lists every test's amount (`5 mg (hplc-purity) + 2 mg (lcms-identity)`).
//! 2. Every container carries the sample reference `<order number>-L<line>` and the compound.
//! 3. Temperature comes from the requirement's handling notes: "frozen"/"freeze" → frozen,
//!    "cool"/"cold"/"refrigerat" → cool, otherwise ambient; a container takes the coldest of its
//!    tests.
//! 4. What must not travel together: sterile, depyrogenated or endotoxin-free containers go in
//!    their own sealed bag, apart from every other container; each sample line gets its own bag;
//!    cool and frozen containers travel in an insulated box with cold packs, apart from ambient
//!    ones.

use serde::{Deserialize, Serialize};

/// What the catalog asks to ship for one test.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requirement {
    pub test_id: String,
    pub container: String,
    pub amount: String,
    pub notes: String,
}

/// One sample line of the order with its requirements (one per test, in quote order).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleLine {
    pub line_number: i32,
    pub compound_name: String,
    pub requirements: Vec<Requirement>,
}

/// Storage temperature of a container in transit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Temperature {
    Ambient,
    Cool,
    Frozen,
}

impl Temperature {
    pub fn as_str(self) -> &'static str {
        match self {
            Temperature::Ambient => "ambient",
            Temperature::Cool => "cool",
            Temperature::Frozen => "frozen",
        }
    }

    /// The temperature a requirement's notes ask for.
    pub fn of_notes(notes: &str) -> Self {
        let notes = notes.to_lowercase();
        if notes.contains("frozen") || notes.contains("freeze") || notes.contains("dry ice") {
            Temperature::Frozen
        } else if ["cool", "cold", "refrigerat", "2-8", "2–8"]
            .iter()
            .any(|word| notes.contains(word))
        {
            Temperature::Cool
        } else {
            Temperature::Ambient
        }
    }
}

/// One packing step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackingStep {
    pub step: i32,
    /// 0 for steps about the whole parcel.
    pub line_number: i32,
    pub sample_reference: String,
    pub compound_name: String,
    pub container: String,
    pub quantity: String,
    pub temperature: String,
    pub instruction: String,
    pub test_ids: Vec<String>,
}

/// The sample reference printed on a line's containers.
pub fn sample_reference(order_number: &str, line_number: i32) -> String {
    format!("{order_number}-L{line_number}")
}

fn is_sterile(container: &str) -> bool {
    let container = container.to_lowercase();
    ["sterile", "depyrogenated", "endotoxin", "pyrogen"]
        .iter()
        .any(|word| container.contains(word))
}

/// One container of a line: the tests that share it.
struct Container<'a> {
    container: &'a str,
    requirements: Vec<&'a Requirement>,
}

/// The packing steps of an order's sample lines, numbered from 1.
pub fn packing_steps(order_number: &str, lines: &[SampleLine]) -> Vec<PackingStep> {
    let mut steps = Vec::new();
    let mut coldest = Temperature::Ambient;
    let mut any_sterile = false;
    for line in lines {
        let reference = sample_reference(order_number, line.line_number);
        let mut containers: Vec<Container<'_>> = Vec::new();
        for requirement in &line.requirements {
            match containers
                .iter_mut()
                .find(|known| known.container == requirement.container)
            {
                Some(known) => known.requirements.push(requirement),
                None => containers.push(Container {
                    container: &requirement.container,
                    requirements: vec![requirement],
                }),
            }
        }
        for container in containers {
            let temperature = container
                .requirements
                .iter()
                .map(|requirement| Temperature::of_notes(&requirement.notes))
                .max()
                .unwrap_or(Temperature::Ambient);
            coldest = coldest.max(temperature);
            let sterile = is_sterile(container.container);
            any_sterile |= sterile;
            let quantity = container
                .requirements
                .iter()
                .map(|requirement| format!("{} ({})", requirement.amount, requirement.test_id))
                .collect::<Vec<_>>()
                .join(" + ");
            let notes: Vec<&str> = container
                .requirements
                .iter()
                .map(|requirement| requirement.notes.trim())
                .filter(|notes| !notes.is_empty())
                .collect();
            let mut instruction = format!(
                "Fill one {} with {quantity} of {}; label it {reference}.",
                container.container, line.compound_name
            );
            if sterile {
                instruction.push_str(" Seal it in its own bag, apart from non-sterile containers.");
            }
            if !notes.is_empty() {
                instruction.push(' ');
                instruction.push_str(&notes.join(" "));
            }
            steps.push(PackingStep {
                step: 0,
                line_number: line.line_number,
                sample_reference: reference.clone(),
                compound_name: line.compound_name.clone(),
                container: container.container.to_owned(),
                quantity,
                temperature: temperature.as_str().to_owned(),
                instruction,
                test_ids: container
                    .requirements
                    .iter()
                    .map(|requirement| requirement.test_id.clone())
                    .collect(),
            });
        }
    }
    let parcel = |instruction: String, temperature: Temperature| PackingStep {
        step: 0,
        line_number: 0,
        sample_reference: order_number.to_owned(),
        compound_name: String::new(),
        container: String::new(),
        quantity: String::new(),
        temperature: temperature.as_str().to_owned(),
        instruction,
        test_ids: Vec::new(),
    };
    if lines.len() > 1 {
        steps.push(parcel(
            "Bag each sample line separately; never put containers of different lines in one bag.".to_owned(),
            Temperature::Ambient,
        ));
    }
    if any_sterile {
        steps.push(parcel(
            "Keep sterile and depyrogenated containers in their own sealed bag, apart from every other container."
                .to_owned(),
            Temperature::Ambient,
        ));
    }
    if coldest > Temperature::Ambient {
        steps.push(parcel(
            format!(
                "Pack {} containers in an insulated box with cold packs, apart from ambient ones.",
                coldest.as_str()
            ),
            coldest,
        ));
    }
    steps.push(parcel(
        format!("Put the packing list with order {order_number} in the box, seal it and attach the label."),
        Temperature::Ambient,
    ));
    for (index, step) in steps.iter_mut().enumerate() {
        step.step = index as i32 + 1;
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requirement(test_id: &str, container: &str, amount: &str, notes: &str) -> Requirement {
        Requirement {
            test_id: test_id.to_owned(),
            container: container.to_owned(),
            amount: amount.to_owned(),
            notes: notes.to_owned(),
        }
    }

    #[test]
    fn tests_asking_for_the_same_container_share_it_and_lines_are_bagged_apart() {
        let vial = "2 mL amber glass vial";
        let lines = vec![
            SampleLine {
                line_number: 1,
                compound_name: "BPC-157".to_owned(),
                requirements: vec![
                    requirement("hplc-purity", vial, "5 mg", ""),
                    requirement("lcms-identity", vial, "2 mg", "May share the vial."),
                    requirement("endotoxin-lal", "Sterile, depyrogenated glass vial", "10 mg", ""),
                ],
            },
            SampleLine {
                line_number: 2,
                compound_name: "TB-500".to_owned(),
                requirements: vec![requirement("hplc-purity", vial, "5 mg", "Ship cool.")],
            },
        ];
        let steps = packing_steps("ORD-1", &lines);
        assert_eq!(steps[0].quantity, "5 mg (hplc-purity) + 2 mg (lcms-identity)");
        assert_eq!(steps[0].sample_reference, "ORD-1-L1");
        assert!(steps[1].instruction.contains("own bag"));
        assert_eq!(steps[2].temperature, "cool");
        assert_eq!(steps[2].line_number, 2);
        let parcel: Vec<&PackingStep> = steps.iter().filter(|step| step.line_number == 0).collect();
        assert_eq!(parcel.len(), 4, "{parcel:?}");
        assert!(parcel.iter().any(|step| step.instruction.contains("insulated")));
        let numbers: Vec<i32> = steps.iter().map(|step| step.step).collect();
        assert_eq!(numbers, (1..=steps.len() as i32).collect::<Vec<_>>());
    }
}
