//! Reading the environment: the one rule every setting follows (an empty value is no value).

/// Environment variable that turns development mode on.
pub const DEV_MODE_VAR: &str = "LAB_DEV_MODE";

/// Returns the environment variable `name` when set and not empty.
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}
