import Glibc

/// One variable of the process's environment, read with `getenv`: Foundation's
/// `ProcessInfo.processInfo` costs ~0.5 ms the first time it is touched (it builds the whole
/// process description), which a command's start to sound should not pay for a few variables.
package enum ProcessEnvironment {
    /// The variable's value; nil when it is not set.
    package static subscript(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }

    /// The variable's value when it is set and not empty.
    package static func nonEmpty(_ name: String) -> String? {
        guard let value = self[name], !value.isEmpty else { return nil }
        return value
    }
}
