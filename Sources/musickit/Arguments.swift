/// What a command accepts: named options with a value, flags, and positional arguments.
struct ArgumentSpec {
    struct Option {
        let name: String        // "--device"
        let valueName: String   // "NAME"
        let help: String
    }
    struct Flag {
        let name: String        // "--no-ui"
        let help: String
    }

    var options: [Option] = []
    var flags: [Flag] = []
    /// e.g. "FILE..." ; empty when the command takes none.
    var positionalName: String = ""
    var minimumPositionals = 0
    var maximumPositionals = Int.max
}

/// Parsed command-line arguments.
struct ParsedArguments {
    var options: [String: String] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []

    func option(_ name: String) -> String? { options[name] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }
}

/// A mistake in the command line: printed with the command's usage, exit code 2.
struct UsageError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

extension ArgumentSpec {
    /// Parses in two stages: tokens into options/flags/positionals, then counts.
    /// `--` ends options; `--name=value` and `--name value` are both accepted.
    func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
            let name = parts[0]
            if let option = options.first(where: { $0.name == name }) {
                if parts.count == 2 {
                    parsed.options[name] = parts[1]
                } else if index < arguments.count {
                    parsed.options[name] = arguments[index]
                    index += 1
                } else {
                    throw UsageError(message: "\(name) needs a value (\(name) \(option.valueName))")
                }
            } else if flags.contains(where: { $0.name == name }), parts.count == 1 {
                parsed.flags.insert(name)
            } else {
                throw UsageError(message: "unknown option \(argument)")
            }
        }
        if parsed.positionals.count < minimumPositionals {
            // Name what is missing: "missing ID" after `catalog songs`, not a count.
            let names = positionalName.split(separator: " ")
            let missing = names.count >= minimumPositionals ? String(names[min(parsed.positionals.count, names.count - 1)])
                : positionalName
            throw UsageError(message: "missing \(missing)")
        }
        if parsed.positionals.count > maximumPositionals {
            let extra = parsed.positionals[maximumPositionals...].joined(separator: " ")
            throw UsageError(message: "unexpected argument\(parsed.positionals.count - maximumPositionals > 1 ? "s" : ""): \(extra)")
        }
        return parsed
    }

    /// The option and flag lines of a help text.
    func optionsHelp() -> String {
        var lines: [String] = []
        for option in options {
            lines.append(Self.row("\(option.name) \(option.valueName)", option.help))
        }
        for flag in flags {
            lines.append(Self.row(flag.name, flag.help))
        }
        lines.append(Self.row("-h, --help", "show this help"))
        return lines.joined(separator: "\n")
    }

    private static func row(_ left: String, _ right: String) -> String {
        let padded = left.count < 24 ? left + String(repeating: " ", count: 24 - left.count) : left + "  "
        return "  " + padded + right
    }
}
