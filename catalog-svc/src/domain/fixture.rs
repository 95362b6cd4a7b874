//! A small catalog document shared by the domain unit tests.

use super::catalog::Catalog;
use super::document;
use serde_json::{Value, json};

/// The fixture document as JSON (tests mutate it to break one rule at a time).
pub fn document_json() -> Value {
    json!({
        "categories": [
            { "id": "potency", "name": "Potency", "description": "Assay of the active compound",
              "conformitySamplePriceCents": 2500, "matrixIds": ["powder", "liquid"] },
            { "id": "purity", "name": "Purity", "description": "Impurities and contaminants",
              "conformitySamplePriceCents": 1000, "matrixIds": ["powder"] }
        ],
        "matrices": [
            { "id": "liquid", "name": "Liquid", "description": "Solutions" },
            { "id": "powder", "name": "Powder", "description": "Lyophilized powder" }
        ],
        "turnarounds": [
            { "id": "standard", "name": "Standard", "businessDays": 10, "surchargeBasisPoints": 0 },
            { "id": "expedited", "name": "Expedited", "businessDays": 5, "surchargeBasisPoints": 5000 }
        ],
        "tests": [
            { "id": "hplc-potency", "name": "HPLC potency", "description": "Assay by HPLC", "method": "HPLC-UV",
              "categoryIds": ["potency", "purity"], "priceCents": 12345,
              "sampleRequirement": { "container": "2 mL amber glass vial", "amount": "5 mg", "notes": "keep cold" } },
            { "id": "residual-solvents", "name": "Residual solvents", "description": "Headspace GC", "method": "GC-MS",
              "categoryIds": ["purity"], "priceCents": 9999,
              "sampleRequirement": { "container": "10 mL headspace vial", "amount": "50 mg", "notes": "" } },
            { "id": "heavy-metals", "name": "Heavy metals", "description": "Pb, Cd, Hg, As", "method": "ICP-MS",
              "categoryIds": ["potency", "purity"], "priceCents": 15050,
              "sampleRequirement": { "container": "15 mL tube", "amount": "100 mg", "notes": "" } }
        ],
        "bundles": [
            { "id": "purity-panel", "name": "Purity panel", "description": "Solvents and metals",
              "categoryIds": ["purity"], "testIds": ["residual-solvents", "heavy-metals"], "priceCents": 22000 }
        ]
    })
}

/// The fixture as a validated catalog.
pub fn catalog() -> Catalog {
    let parsed = document::parse(&document_json().to_string()).expect("the fixture parses");
    Catalog::from_document(parsed.document).expect("the fixture is valid")
}
