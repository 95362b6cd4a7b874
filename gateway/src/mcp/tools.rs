//! The tool table: one MCP tool per REST operation, named `svc.<domain>.<action>`, built from the
//! operation's one declaration in `crate::operation_table` (name, title, annotations, guard,
//! description and its REST twin's method and path). Everything else comes from the twin: its
//! scopes and whether it takes an idempotency key from `crate::scopes`, its input and output
//! schemas from the OpenAPI document ([`super::schema`]), its behaviour from the operation
//! function the REST handler calls ([`super::call`]). See `docs/mcp.md`, "Adding a tool".

use crate::scopes::{self, Access};
use http::Method;
use serde::Serialize;

/// Hints about a tool's behaviour for the client (MCP `ToolAnnotations`).
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    pub open_world_hint: bool,
}

/// A read: no side effect, the same answer for the same state.
const READ: Annotations = Annotations {
    read_only_hint: true,
    destructive_hint: false,
    idempotent_hint: true,
    open_world_hint: false,
};

/// A write that changes state (the sandbox simulation: repeating a scenario changes nothing,
/// except an amendment, which amends again).
const WRITE: Annotations = Annotations {
    read_only_hint: false,
    destructive_hint: false,
    idempotent_hint: false,
    open_world_hint: false,
};

/// An additive write that a retry with the same idempotency key does not repeat.
const GUARDED_WRITE: Annotations = Annotations {
    read_only_hint: false,
    destructive_hint: false,
    idempotent_hint: true,
    open_world_hint: false,
};

/// One tool.
#[derive(Debug)]
pub struct Tool {
    /// `svc.<domain>.<action>`.
    pub name: &'static str,
    /// Human-readable title.
    pub title: &'static str,
    /// The REST twin: HTTP method.
    pub method: &'static str,
    /// The REST twin: path template relative to `/api/v1/agent`.
    pub path: &'static str,
    /// Written for a model: what it does, when to use it, what guards it.
    pub description: &'static str,
    /// The guards of the write beyond scope (docs/mcp.md's table); empty for a read.
    pub guard: &'static str,
    pub annotations: Annotations,
}

impl Tool {
    /// The twin's entry of the scope table.
    ///
    /// # Panics
    /// When the twin is not in the scope table (the unit tests catch it).
    pub fn operation(&self) -> &'static scopes::Operation {
        let method = Method::from_bytes(self.method.as_bytes()).unwrap_or(Method::GET);
        scopes::operation(&method, self.path)
            .unwrap_or_else(|| panic!("{} {} is not in the scope table", self.method, self.path))
    }

    /// The scopes a key needs to see and call the tool (its twin's).
    pub fn required_scopes(&self) -> &'static [&'static str] {
        match self.operation().access {
            Access::Scopes(required) => required,
            Access::Public => &[],
        }
    }

    /// True for the tool of a sandbox-only operation (`scopes::SANDBOX_ONLY`).
    pub fn sandbox_only(&self) -> bool {
        scopes::sandbox_only(self.method, self.path)
    }

    /// True when the key of `principal` may see and call the tool: its scopes allow it, and a
    /// sandbox-only tool is for sandbox customers' keys only (any other key knows it not).
    pub fn visible_to(&self, principal: &platform::principal::Principal) -> bool {
        self.allowed(&principal.scopes) && (principal.sandbox || !self.sandbox_only())
    }

    /// True when a key holding `held` may see and call the tool.
    pub fn allowed(&self, held: &[String]) -> bool {
        self.required_scopes()
            .iter()
            .all(|scope| held.iter().any(|held| held == scope))
    }

    /// True when the twin requires `Idempotency-Key`: the tool requires `idempotencyKey`.
    pub fn needs_idempotency_key(&self) -> bool {
        self.operation().requires_idempotency_key()
    }
}

/// Looks a tool up by name.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|tool| tool.name == name)
}

/// The tool entries of the declarations of `crate::operation_table`.
macro_rules! tools {
    ($({ route: $method:ident $path:literal, tool: $tool:tt, scope: $scope:tt, rest: $rest:tt, call: $call:tt, })*) => {
        /// Every tool, in the order of the canonical flow: one per declaration of
        /// `crate::operation_table`.
        pub const TOOLS: &[Tool] = &[$(tools!(@entry $method $path $tool)),*];
    };
    (@entry $method:ident $path:literal {
        name: $name:literal,
        title: $title:literal,
        annotations: $annotations:expr,
        guard: $guard:literal,
        description: $description:literal,
    }) => {
        Tool {
            name: $name,
            title: $title,
            method: crate::operation_table::method_name!($method),
            path: $path,
            description: $description,
            guard: $guard,
            annotations: $annotations,
        }
    };
}

crate::operation_table::operation_table!(tools);

/// The tool table of `docs/mcp.md`: name, scope, REST twin and guard of every tool.
pub fn markdown_table() -> String {
    let mut table = String::from("| Tool | Scope | REST twin | Guard |\n|---|---|---|---|\n");
    for tool in TOOLS {
        let scopes: Vec<String> = tool
            .required_scopes()
            .iter()
            .map(|scope| format!("`{scope}`"))
            .collect();
        let guard = if tool.guard.is_empty() {
            "read-only"
        } else {
            tool.guard
        };
        let scopes = if scopes.is_empty() {
            "any key (public twin)".to_owned()
        } else {
            scopes.join(" and ")
        };
        table.push_str(&format!(
            "| `{}` | {} | `{} {}` | {} |\n",
            tool.name, scopes, tool.method, tool.path, guard
        ));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_routed_rest_operation_has_exactly_one_tool() {
        let (_, document) = crate::http::agent_routes();
        let mut routed = 0;
        for (path, item) in document.paths.paths.iter() {
            let methods = [
                ("GET", item.get.is_some()),
                ("POST", item.post.is_some()),
                ("PUT", item.put.is_some()),
                ("PATCH", item.patch.is_some()),
                ("DELETE", item.delete.is_some()),
            ];
            for (method, present) in methods {
                if !present {
                    continue;
                }
                routed += 1;
                let twins = TOOLS
                    .iter()
                    .filter(|tool| tool.method == method && tool.path == path)
                    .count();
                assert_eq!(
                    twins, 1,
                    "{method} {path} needs exactly one MCP tool in gateway/src/mcp/tools.rs (docs/mcp.md)"
                );
            }
        }
        assert_eq!(routed, TOOLS.len(), "every tool has a routed REST twin");
    }

    #[test]
    fn docs_mcp_md_lists_every_tool_as_the_table_says() {
        let document = include_str!("../../../docs/mcp.md");
        assert!(
            document.contains(&markdown_table()),
            "docs/mcp.md is out of date; paste the table from gateway::mcp::tools::markdown_table():\n{}",
            markdown_table()
        );
    }

    #[test]
    fn names_are_unique_and_in_the_spec_style_and_scopes_come_from_the_twin() {
        for (index, tool) in TOOLS.iter().enumerate() {
            assert!(
                TOOLS[..index].iter().all(|other| other.name != tool.name),
                "{}",
                tool.name
            );
            assert!(tool.name.starts_with("svc."), "{}", tool.name);
            assert!(
                tool.name.len() <= 64
                    && tool
                        .name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b == b'.' || b == b'_'),
                "{}",
                tool.name
            );
            // Only the public verification's tools need no scope (any key may call them, as
            // anyone may call their twins); its POST forms read like its GET forms.
            let public = tool.path.starts_with("/verify");
            assert_eq!(tool.required_scopes().is_empty(), public, "{}", tool.name);
            assert_eq!(
                tool.annotations.read_only_hint,
                tool.method == "GET" || public,
                "{}",
                tool.name
            );
        }
        let create = find("svc.order.create").unwrap();
        assert_eq!(create.required_scopes(), &["orders:write"]);
        assert!(create.needs_idempotency_key());
        assert!(!find("svc.quote.create").unwrap().needs_idempotency_key());
        assert!(!create.allowed(&["orders:read".into()]));
        assert!(create.allowed(&["orders:write".into()]));
    }
}
