"""Pure loading and validation of system, test and scenario TOML. No side effects."""
