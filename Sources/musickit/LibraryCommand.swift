import PlatformSupport
import AudioEngine
import Foundation
import MusicKitCore

/// `musickit library scan|list|recent|add|playlist`.
enum LibraryCommand {
    static let spec = ArgumentSpec(
        options: [.init(name: "--search", valueName: "TEXT", help: "list: only items whose name, artist or album contains TEXT"),
                  .init(name: "--sort", valueName: "title|artist|added", help: "list: order (default title)"),
                  .init(name: "--limit", valueName: "N", help: "list: at most N items (default 100); recent: (default 10)")],
        flags: [.init(name: "--json", help: "list, recent: print Apple Music API JSON"),
                .init(name: "--loudness", help: "scan: then measure the songs without ReplayGain tags, for Sound Check"),
                .init(name: "--no-loudness", help: "scan: do not measure them, though the account's Sound Check is on"),
                .init(name: "--descending", help: "list: reverse the order")],
        positionalName: "scan|list|recent|add|playlist ...", minimumPositionals: 1)

    static let help = """
    usage: musickit library scan [--loudness|--no-loudness] [FOLDER...]
           musickit library list [songs|albums|artists|playlists] [--search TEXT] [--sort title|artist|added]
                                 [--descending] [--limit N] [--json]
           musickit library recent [songs|containers] [--limit N] [--json]
           musickit library add ID...
           musickit library playlist NAME [ID...]

    The person's own music. `scan` reads the audio files under the library folders (~/Music
    until FOLDER... sets them), with their tags; only new and changed files are read again,
    and files that cannot be read are listed with the reason; then, when the account's Sound
    Check is on or with --loudness, it measures the songs whose files carry no ReplayGain tags
    (EBU R128, once per file, an album's songs together: Sound Check plays them normalized from
    their first play; ~270× realtime on one core). `list` shows the library
    (MusicLibraryRequest). `recent` shows the listening history, newest first: the songs heard,
    or the albums and playlists they were played from (MusicRecentlyPlayedRequest). `add` adds
    catalog songs, albums or playlists by ID. `playlist`
    creates a library playlist from catalog song IDs. Reading the library needs authorization
    (`musickit authorize`).

    options:
    \(spec.optionsHelp())

    exit codes: 0 success, 3 partly done (files skipped, IDs not found), 1 failure, 2 usage
    """

    static func run(_ arguments: [String]) -> ExitCode {
        let parsed: ParsedArguments
        do {
            parsed = try spec.parse(arguments)
            guard ["scan", "list", "recent", "add", "playlist"].contains(parsed.positionals[0]) else {
                throw UsageError(message: "unknown library command \(parsed.positionals[0])")
            }
            if let limit = parsed.option("--limit"), Int(limit) == nil { throw UsageError(message: "--limit needs a number") }
            if parsed.has("--loudness") && parsed.has("--no-loudness") {
                throw UsageError(message: "--loudness and --no-loudness contradict each other")
            }
            if let sort = parsed.option("--sort"), !["title", "artist", "added"].contains(sort) {
                throw UsageError(message: "--sort takes title, artist or added")
            }
            if parsed.positionals[0] == "list", parsed.positionals.count > 2
                || (parsed.positionals.count == 2 && !["songs", "albums", "artists", "playlists"].contains(parsed.positionals[1])) {
                throw UsageError(message: "library list takes songs, albums, artists or playlists")
            }
            if parsed.positionals[0] == "recent", parsed.positionals.count > 2
                || (parsed.positionals.count == 2 && !["songs", "containers"].contains(parsed.positionals[1])) {
                throw UsageError(message: "library recent takes songs or containers")
            }
            if ["add"].contains(parsed.positionals[0]), parsed.positionals.count < 2 { throw UsageError(message: "library add needs IDs") }
            if parsed.positionals[0] == "playlist", parsed.positionals.count < 2 { throw UsageError(message: "library playlist needs a NAME") }
        } catch {
            Console.error("musickit library: \(errorMessage(error))\n\n\(help)\n")
            return .usage
        }
        if let refused = requireAuthorization("library") { return refused }
        if let problem = MusicLibraryScanner.problem { Console.error("warning: \(problem)\n") }
        do {
            switch parsed.positionals[0] {
            case "scan":
                let measuring = parsed.has("--loudness")
                    || (!parsed.has("--no-loudness") && MusicAccountSettings.load().settings.soundCheck != .off)
                return try scan(Array(parsed.positionals.dropFirst()), measuringLoudness: measuring)
            case "list": return try list(parsed)
            case "recent": return try recent(parsed)
            case "add": return try add(Array(parsed.positionals.dropFirst()))
            default: return try playlist(name: parsed.positionals[1], ids: Array(parsed.positionals.dropFirst(2)))
            }
        } catch {
            Console.error("musickit library: \(errorMessage(error))\n")
            return .failure
        }
    }

    private static func scan(_ folders: [String], measuringLoudness: Bool) throws -> ExitCode {
        if !folders.isEmpty {
            for folder in folders where !FileManager.default.fileExists(atPath: folder) {
                Console.error("musickit library scan: no folder \(folder)\n")
                return .failure
            }
            try MusicLibraryScanner.setFolders(folders.map { URL(fileURLWithPath: $0) })
        }
        let interactive = isatty(2) == 1
        Console.error("scanning \(MusicLibraryScanner.folders.map(\.path).joined(separator: ", "))\n")
        let result = try MusicLibraryScanner.scan { progress in
            if interactive {
                Console.replaceLine("  \(progress.filesSeen)/\(progress.fileCount) files, \(progress.filesRead) read", toStandardError: true)
            }
        }
        if interactive { Console.replaceLine("", toStandardError: true) }
        for (path, reason) in result.skipped { Console.error("skipped: \(reason.hasPrefix(path) ? reason : "\(path): \(reason)")\n") }
        Console.out("\(result.filesSeen) files: \(result.added) added, \(result.updated) updated, \(result.unchanged) unchanged, "
                    + "\(result.removed) removed, \(result.skipped.count) skipped\n")
        guard measuringLoudness else { return result.skipped.isEmpty ? .success : .someEntriesFailed }
        let pass = try MusicLibraryScanner.measureLoudness { done, total in
            if interactive { Console.replaceLine("  measuring loudness: \(done)/\(total) songs", toStandardError: true) }
        }
        if interactive { Console.replaceLine("", toStandardError: true) }
        for reason in pass.failed { Console.error("not measured: \(reason)\n") }
        Console.out("loudness: \(pass.measured) measured, \(pass.known) known already, \(pass.tagged) tagged, "
                    + "\(pass.failed.count) failed\n")
        return result.skipped.isEmpty && pass.failed.isEmpty ? .success : .someEntriesFailed
    }

    private static func list(_ parsed: ParsedArguments) throws -> ExitCode {
        let kind = parsed.positionals.count > 1 ? parsed.positionals[1] : "songs"
        let limit = parsed.option("--limit").flatMap(Int.init) ?? 100
        let search = parsed.option("--search")
        let sort = parsed.option("--sort") ?? "title"
        let ascending = !parsed.has("--descending")
        let json = parsed.has("--json")
        let text: String = try waitFor {
            switch kind {
            case "albums":
                var request = MusicLibraryRequest<Album>()
                request.limit = limit
                if let search { request.filter(text: search) }
                switch sort {
                case "artist": request.sort(by: \.artistName, ascending: ascending)
                case "added": request.sort(by: \.libraryAddedDate, ascending: ascending)
                default: request.sort(by: \.title, ascending: ascending)
                }
                let items = try await request.response().items
                return json ? try jsonText(items) : ItemRows.albums(items)
            case "artists":
                var request = MusicLibraryRequest<Artist>()
                request.limit = limit
                if let search { request.filter(text: search) }
                if sort == "added" { request.sort(by: \.libraryAddedDate, ascending: ascending) } else { request.sort(by: \.name, ascending: ascending) }
                let items = try await request.response().items
                return json ? try jsonText(items) : ItemRows.artists(items)
            case "playlists":
                var request = MusicLibraryRequest<Playlist>()
                request.limit = limit
                if let search { request.filter(text: search) }
                if sort == "added" { request.sort(by: \.libraryAddedDate, ascending: ascending) } else { request.sort(by: \.name, ascending: ascending) }
                let items = try await request.response().items
                return json ? try jsonText(items) : ItemRows.playlists(items)
            default:
                var request = MusicLibraryRequest<Song>()
                request.limit = limit
                if let search { request.filter(text: search) }
                switch sort {
                case "artist":
                    request.sort(by: \.artistName, ascending: ascending)
                    request.sort(by: \.albumTitle, ascending: ascending)
                    request.sort(by: \.trackNumber, ascending: ascending)
                case "added": request.sort(by: \.libraryAddedDate, ascending: ascending)
                default: request.sort(by: \.title, ascending: ascending)
                }
                let items = try await request.response().items
                return json ? try jsonText(items) : ItemRows.songs(items)
            }
        }
        Console.out(text + "\n")
        return .success
    }

    private static func recent(_ parsed: ParsedArguments) throws -> ExitCode {
        let containers = parsed.positionals.count > 1 && parsed.positionals[1] == "containers"
        let limit = parsed.option("--limit").flatMap(Int.init) ?? 10
        let json = parsed.has("--json")
        let text: String = try waitFor {
            if containers {
                var request = MusicRecentlyPlayedContainerRequest()
                request.limit = limit
                let items = try await request.response().items
                if json { return try jsonText(items) }
                return table(["KIND", "TITLE", "BY", "ID"], items.map { item -> [String] in
                    let kind = switch item { case .album: "album"; case .playlist: "playlist"; case .station: "station" }
                    return [kind, item.title, item.subtitle ?? "", item.id.rawValue]
                })
            }
            var request = MusicRecentlyPlayedRequest<Song>()
            request.limit = limit
            let items = try await request.response().items
            return json ? try jsonText(items) : ItemRows.songs(items)
        }
        Console.out(text + "\n")
        return .success
    }

    private static func add(_ ids: [String]) throws -> ExitCode {
        try prepareCatalog()
        var missing = 0
        for id in ids {
            let outcome: String = try waitFor {
                let itemID = MusicItemID(id)
                do {
                    if let song = try await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: itemID).response().items.first {
                        try await MusicLibrary.shared.add(song)
                        return "added song \(song.title)"
                    }
                    if let album = try await MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: itemID).response().items.first {
                        try await MusicLibrary.shared.add(album)
                        return "added album \(album.title)"
                    }
                    if let playlist = try await MusicCatalogResourceRequest<Playlist>(matching: \.id, equalTo: itemID).response().items.first {
                        try await MusicLibrary.shared.add(playlist)
                        return "added playlist \(playlist.name)"
                    }
                } catch MusicLibrary.Error.itemAlreadyAdded {
                    return "already in the library: \(id)"
                }
                return ""
            }
            if outcome.isEmpty {
                Console.error("not in the catalog: \(id)\n")
                missing += 1
            } else {
                Console.out(outcome + "\n")
            }
        }
        return missing == 0 ? .success : (missing == ids.count ? .nothingPlayable : .someEntriesFailed)
    }

    private static func playlist(name: String, ids: [String]) throws -> ExitCode {
        if !ids.isEmpty { try prepareCatalog() }
        let playlist: Playlist = try waitFor {
            let songs = try await MusicCatalogResourceRequest<Song>(matching: \.id, memberOf: ids.map { MusicItemID($0) }).response().items
            return try await MusicLibrary.shared.createPlaylist(name: name, description: nil, authorDisplayName: nil, items: Array(songs))
        }
        Console.out("created playlist \(playlist.name) (\(playlist.id)) with \(playlist.tracks?.count ?? 0) songs\n")
        return .success
    }
}
