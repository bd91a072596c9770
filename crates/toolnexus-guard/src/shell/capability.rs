//! The classes of what a command does, by name: the vocabulary the policy's
//! `capabilities` matcher and the effect tables share.

use std::fmt;
use std::str::FromStr;

/// A class of effect a command can have on the machine. Each has a stable
/// kebab-case name, used in policy files and printed by `explain`.
///
/// ```
/// use toolnexus_guard::shell::Capability;
/// let c: Capability = "vcs-rewrite".parse()?;
/// assert_eq!(c, Capability::VcsRewrite);
/// assert_eq!(c.to_string(), "vcs-rewrite");
/// assert_eq!(Capability::ALL.len(), 9);
/// # Ok::<(), toolnexus_guard::shell::UnknownCapability>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// Removes or destroys files or their content.
    Delete,
    /// Creates or changes files.
    Write,
    /// Reads files' content.
    Read,
    /// Changes owners, modes, ACLs or attributes.
    Permissions,
    /// Talks to another machine.
    Network,
    /// Runs code the guard does not see as commands (shells, interpreters, sourcing).
    Exec,
    /// Runs as another (usually the super) user.
    Privilege,
    /// Rewrites or drops version-control history.
    VcsRewrite,
    /// Installs software.
    Install,
}

impl Capability {
    /// Every capability, in the order of their names in the docs.
    pub const ALL: [Capability; 9] = [
        Capability::Delete,
        Capability::Write,
        Capability::Read,
        Capability::Permissions,
        Capability::Network,
        Capability::Exec,
        Capability::Privilege,
        Capability::VcsRewrite,
        Capability::Install,
    ];

    /// The kebab-case name policy files use (`"delete"`, `"vcs-rewrite"`…).
    ///
    /// ```
    /// use toolnexus_guard::shell::Capability;
    /// assert_eq!(Capability::Permissions.as_str(), "permissions");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Delete => "delete",
            Capability::Write => "write",
            Capability::Read => "read",
            Capability::Permissions => "permissions",
            Capability::Network => "network",
            Capability::Exec => "exec",
            Capability::Privilege => "privilege",
            Capability::VcsRewrite => "vcs-rewrite",
            Capability::Install => "install",
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A capability name no class has; its message lists the known names.
///
/// ```
/// use toolnexus_guard::shell::Capability;
/// let e = "erase".parse::<Capability>().unwrap_err();
/// assert!(e.to_string().contains("\"erase\""));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCapability(pub String);

impl fmt::Display for UnknownCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Capability::ALL.iter().map(|c| c.as_str()).collect();
        write!(
            f,
            "unknown capability \"{}\": expected one of {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownCapability {}

impl FromStr for Capability {
    type Err = UnknownCapability;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Capability::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownCapability(s.to_string()))
    }
}

impl serde::Serialize for Capability {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Capability {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}
