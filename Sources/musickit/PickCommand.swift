import PlatformSupport
import AudioEngine
import Foundation
import MusicKitCore
import MusicKitTerminal

/// `musickit pick`: the music picker (MusicPicker), the chosen items' IDs on standard output.
enum PickCommand {
    static let spec = ArgumentSpec(
        options: [],
        flags: [.init(name: "--multiple", help: "pick several (space selects, enter finishes; in an album or playlist, a adds every track)"),
                .init(name: "--json", help: "print the chosen songs, albums and playlists as JSON instead of their IDs")]
            + CatalogChoice.flags,
        positionalName: "[TERM...]", minimumPositionals: 0)

    static let help = """
    usage: musickit pick [--multiple] [--json] [--remote|--local] [TERM...]

    Opens the music picker on the terminal: it searches the catalog and your library as you
    type (tab switches between them; the library only without a subscription), moves with ↑/↓
    or j/k, opens an album or playlist with enter to pick from its tracks, and prints what you
    chose, one ID per line, so that `musickit play $(musickit pick)` plays it. TERM starts the
    search. Esc cancels (exit 1, nothing printed).

    options:
    \(spec.optionsHelp())

    exit codes:
    \(ExitCode.helpText)
    """

    /// The selection as scripts read it.
    struct Output: Encodable {
        let songs: [Item]
        let albums: [Item]
        let playlists: [Item]
        struct Item: Encodable {
            let id: String
            let title: String
            let artistName: String?
        }
    }

    static func run(_ arguments: [String]) -> ExitCode {
        let parsed: ParsedArguments
        do {
            parsed = try spec.parse(arguments)
            try CatalogChoice.apply(parsed)
        } catch {
            Console.error("musickit pick: \(errorMessage(error))\n\n\(help)\n")
            return .usage
        }
        if let refused = requireAuthorization("pick") { return refused }
        let picker = MusicPicker(allowsMultipleSelection: parsed.has("--multiple"), searchTerm: parsed.positionals.joined(separator: " "))
        let selection: MusicPicker.Selection?
        do {
            selection = try waitFor { try await picker.present() }
        } catch {
            Console.error("musickit pick: \(errorMessage(error))\n")
            return .failure
        }
        guard let selection, !selection.isEmpty else {
            Console.error("musickit pick: nothing picked\n")
            return .failure
        }
        if parsed.has("--json") {
            let output = Output(
                songs: selection.songs.map { .init(id: $0.id.rawValue, title: $0.title, artistName: $0.artistName) },
                albums: selection.albums.map { .init(id: $0.id.rawValue, title: $0.title, artistName: $0.artistName) },
                playlists: selection.playlists.map { .init(id: $0.id.rawValue, title: $0.name, artistName: $0.curatorName) })
            do {
                Console.out(try jsonText(output) + "\n")
            } catch {
                Console.error("musickit pick: \(errorMessage(error))\n")
                return .failure
            }
        } else {
            let ids = selection.songs.map(\.id.rawValue) + selection.albums.map(\.id.rawValue) + selection.playlists.map(\.id.rawValue)
            Console.out(ids.joined(separator: "\n") + "\n")
        }
        return .success
    }
}
