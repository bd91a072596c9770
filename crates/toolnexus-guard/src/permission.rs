//! What the guard says about a call: allow, ask or deny, ordered from the
//! most to the least permissive so that the strictest of several is their
//! maximum.

/// What the guard says about a call: let it run, ask the person, or block it.
///
/// ```
/// use toolnexus_guard::Permission;
/// assert_eq!(Permission::Ask.max(Permission::Deny), Permission::Deny);
/// assert_eq!(Permission::parse("ask"), Some(Permission::Ask));
/// assert_eq!(Permission::Deny.as_str(), "deny");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Permission {
    /// Let it run.
    Allow,
    /// Ask the person.
    Ask,
    /// Block it.
    Deny,
}

impl Permission {
    /// The hook protocol's spelling (`permissionDecision`).
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Allow => "allow",
            Permission::Ask => "ask",
            Permission::Deny => "deny",
        }
    }

    /// The permission a label spells (`allow`, `ask`, `deny`), if any.
    pub fn parse(s: &str) -> Option<Permission> {
        match s {
            "allow" => Some(Permission::Allow),
            "ask" => Some(Permission::Ask),
            "deny" => Some(Permission::Deny),
            _ => None,
        }
    }
}

impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
