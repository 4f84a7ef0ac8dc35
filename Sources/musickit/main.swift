import Foundation

// musickit: the command-line face of OpenMusicKit. One file per command; this one dispatches.

/// A subcommand: its name, one line for the general help, its own help, and how it runs.
struct Command: Sendable {
    let name: String
    let summary: String
    /// Made only when asked for: building every command's help text costs a play command
    /// time before its first sound.
    let help: @Sendable () -> String
    let run: @Sendable ([String]) -> ExitCode
}

let commands: [Command] = [
    Command(name: "play", summary: "play songs, albums, playlists and files through the speakers, gaplessly",
            help: { PlayCommand.help }, run: PlayCommand.run),
    Command(name: "search", summary: "search the catalog", help: { SearchCommand.help }, run: SearchCommand.run),
    Command(name: "catalog", summary: "look catalog items up by ID; import catalog documents",
            help: { CatalogCommand.help }, run: CatalogCommand.run),
    Command(name: "library", summary: "scan, list and add to your own music", help: { LibraryCommand.help }, run: LibraryCommand.run),
    Command(name: "account", summary: "show and change the account: storefront, subscription, explicit, history",
            help: { AccountCommand.help }, run: AccountCommand.run),
    Command(name: "authorize", summary: "show, ask or set an app's access to your music", help: { AuthorizeCommand.help },
            run: AuthorizeCommand.run),
    Command(name: "subscribe", summary: "the Apple Music subscription offer", help: { SubscribeCommand.help },
            run: SubscribeCommand.run),
    Command(name: "probe", summary: "what an audio file is and whether it plays (decoded, not played)",
            help: { ProbeCommand.help }, run: ProbeCommand.run),
    Command(name: "pick", summary: "pick music from the catalog and your library; prints the IDs",
            help: { PickCommand.help }, run: PickCommand.run),
] + SystemCommand.commands + [
    SystemCommand.seek,
    SystemCommand.volume,
    Command(name: "daemon", summary: "start, stop or look at the system player's daemon (musickitd)",
            help: { DaemonCommand.help }, run: DaemonCommand.run),
]

/// Built when shown: a global of main.swift is built at every start, before the first sound.
var generalHelp: String { """
usage: musickit COMMAND [OPTIONS] [ARGUMENTS]

OpenMusicKit: Apple's MusicKit for Linux, over a real-time ALSA audio engine.

commands:
\(commands.map { "  " + padded($0.name, to: 10) + $0.summary }.joined(separator: "\n"))
  help      show help for a command (musickit help play)

Run `musickit COMMAND --help` for a command's options; `musickit --version` prints the version.

exit codes:
\(ExitCode.helpText)
""" }

@MainActor
func runCommandLine(_ arguments: [String]) -> ExitCode {
    guard let first = arguments.first else {
        Console.error(generalHelp + "\n")
        return .usage
    }
    switch first {
    case "-h", "--help":
        Console.out(generalHelp + "\n")
        return .success
    case "--version":
        Console.out(VersionLine.text + "\n")
        return .success
    case "help":
        guard let name = arguments.dropFirst().first else {
            Console.out(generalHelp + "\n")
            return .success
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            Console.error("musickit: unknown command '\(name)'\n\n\(generalHelp)\n")
            return .usage
        }
        Console.out(command.help() + "\n")
        return .success
    default:
        guard let command = commands.first(where: { $0.name == first }) else {
            Console.error("musickit: unknown command '\(first)'\n\n\(generalHelp)\n")
            return .usage
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("-h") || rest.contains("--help") {
            Console.out(command.help() + "\n")
            return .success
        }
        return command.run(rest)
    }
}

exit(runCommandLine(Array(CommandLine.arguments.dropFirst())).rawValue)
