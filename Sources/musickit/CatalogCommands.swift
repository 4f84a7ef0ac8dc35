import PlatformSupport
import AudioEngine
import Foundation
import MusicKitCore

/// Rows of the people-facing tables, one shape per item type.
enum ItemRows {
    static func songs(_ songs: some Collection<Song>) -> String {
        table(["ID", "TITLE", "ARTIST", "ALBUM", "TIME", ""], songs.map {
            [$0.id.rawValue, $0.title, $0.artistName, $0.albumTitle ?? "", duration($0.duration),
             $0.contentRating == .explicit ? "explicit" : ""]
        })
    }

    static func albums(_ albums: some Collection<Album>) -> String {
        table(["ID", "TITLE", "ARTIST", "TRACKS", "YEAR"], albums.map {
            [$0.id.rawValue, $0.title, $0.artistName, String($0.trackCount),
             $0.releaseDate.map { String(Calendar(identifier: .gregorian).component(.year, from: $0)) } ?? ""]
        })
    }

    static func artists(_ artists: some Collection<Artist>) -> String {
        table(["ID", "NAME", "GENRES"], artists.map { [$0.id.rawValue, $0.name, ($0.genreNames ?? []).joined(separator: ", ")] })
    }

    static func playlists(_ playlists: some Collection<Playlist>) -> String {
        table(["ID", "NAME", "CURATOR", "TRACKS"], playlists.map {
            [$0.id.rawValue, $0.name, $0.curatorName ?? "", $0.tracks.map { String($0.count) } ?? ""]
        })
    }
}

/// `musickit search TERM`: searches the catalog.
enum SearchCommand {
    static let spec = ArgumentSpec(
        options: [.init(name: "--types", valueName: "LIST", help: "songs,albums,artists,playlists (default: all four)"),
                  .init(name: "--limit", valueName: "N", help: "results per type, 1-50 (default 10)"),
                  .init(name: "--offset", valueName: "N", help: "skip the first N results of each type"),
                  .init(name: "--storefront", valueName: "CODE", help: "search this storefront instead of the account's")],
        flags: [.init(name: "--json", help: "print the Apple Music API search response as JSON")] + CatalogChoice.flags,
        positionalName: "TERM", minimumPositionals: 1)

    static let help = """
    usage: musickit search [--types LIST] [--limit N] [--offset N] [--storefront CODE] [--json] [--remote|--local] TERM...

    Searches the catalog (titles, artists and albums; each word matches as a prefix, accents
    do not matter) in the account's storefront, leaving out explicit items when the account
    does not allow them. The Apple Music API answers when a developer token is configured,
    the embedded catalog otherwise (see `musickit catalog status`).

    options:
    \(spec.optionsHelp())

    exit codes: 0 found something, 4 found nothing, 1 the catalog could not be read, 2 usage
    """

    static let typeNames: [String: any MusicCatalogSearchable.Type] = [
        "songs": Song.self, "albums": Album.self, "artists": Artist.self, "playlists": Playlist.self,
        "music-videos": MusicVideo.self, "stations": Station.self, "curators": Curator.self,
    ]

    static func run(_ arguments: [String]) -> ExitCode {
        let parsed: ParsedArguments
        var types: [any MusicCatalogSearchable.Type] = [Song.self, Album.self, Artist.self, Playlist.self]
        do {
            parsed = try spec.parse(arguments)
            if let list = parsed.option("--types") {
                types = try list.split(separator: ",").map { name throws(UsageError) -> any MusicCatalogSearchable.Type in
                    guard let type = typeNames[String(name)] else {
                        throw UsageError(message: "unknown type \(name) (types: \(typeNames.keys.sorted().joined(separator: ", ")))")
                    }
                    return type
                }
            }
            if let value = parsed.option("--limit"), !(Int(value).map { (1...50).contains($0) } ?? false) {
                throw UsageError(message: "--limit takes a number from 1 to 50, not \(value)")
            }
            if let value = parsed.option("--offset"), !(Int(value).map { $0 >= 0 } ?? false) {
                throw UsageError(message: "--offset takes a number from 0 up, not \(value)")
            }
            try CatalogChoice.apply(parsed)
        } catch {
            Console.error("musickit search: \(errorMessage(error))\n\n\(help)\n")
            return .usage
        }
        let term = parsed.positionals.joined(separator: " ")
        let limit = parsed.option("--limit").flatMap(Int.init) ?? 10
        let offset = parsed.option("--offset").flatMap(Int.init)
        let searchTypes = types
        do {
            try prepareCatalog(quiet: parsed.has("--json"))
            let response = try waitFor { () async throws -> MusicCatalogSearchResponse in
                var request = MusicCatalogSearchRequest(term: term, types: searchTypes)
                request.limit = limit
                request.offset = offset
                if let storefront = parsed.option("--storefront") {
                    return try await MusicCatalogIndex.withStorefront(storefront) { try await request.response() }
                }
                return try await request.response()
            }
            noteIfStale(response.answerSource)
            let found = response.songs.count + response.albums.count + response.artists.count + response.playlists.count
                + response.musicVideos.count + response.stations.count + response.curators.count
            if parsed.has("--json") {
                Console.out(try jsonText(response) + "\n")
            } else if found == 0 {
                Console.error("nothing found for \"\(term)\"\n")
            } else {
                var sections: [String] = []
                if !response.songs.isEmpty { sections.append("Songs\n" + ItemRows.songs(response.songs)) }
                if !response.albums.isEmpty { sections.append("Albums\n" + ItemRows.albums(response.albums)) }
                if !response.artists.isEmpty { sections.append("Artists\n" + ItemRows.artists(response.artists)) }
                if !response.playlists.isEmpty { sections.append("Playlists\n" + ItemRows.playlists(response.playlists)) }
                Console.out(sections.joined(separator: "\n\n") + "\n")
            }
            return found == 0 ? .nothingPlayable : .success
        } catch {
            Console.error("musickit search: \(errorMessage(error))\n")
            return .failure
        }
    }
}

/// `musickit catalog TYPE ID...` and `musickit catalog import FILE...`.
enum CatalogCommand {
    static let spec = ArgumentSpec(
        options: [.init(name: "--storefront", valueName: "CODE", help: "answer from this storefront instead of the account's")],
        flags: [.init(name: "--find-equivalents", help: "answer IDs of other storefronts (or explicit items the account does not allow) with their equivalents"),
                .init(name: "--json", help: "print the items as Apple Music API JSON")] + CatalogChoice.flags,
        positionalName: "songs|albums|artists|playlists ID...", minimumPositionals: 2)

    static let help = """
    usage: musickit catalog songs|albums|artists|playlists [--storefront CODE] [--find-equivalents] [--json] [--remote|--local] ID...
           musickit catalog import FILE...
           musickit catalog status [--remote|--local]

    Looks items up in the catalog by ID, in the order given, as MusicCatalogResourceRequest does.
    An ID the catalog does not have is reported, not an error. Albums come with their tracks,
    artists with their albums, playlists with their tracks.

    The catalog is the Apple Music API when a developer token is configured
    (MUSICKIT_DEVELOPER_TOKEN, or MUSICKIT_DEVELOPER_KEY_FILE, MUSICKIT_KEY_ID and
    MUSICKIT_TEAM_ID; MUSICKIT_CATALOG=remote|local chooses for good), with its answers kept
    for offline use; otherwise the embedded catalog (bundled and imported documents).

    `import` checks Apple Music API documents (the file and JSON path of any mistake are
    named), copies them into the catalog folder and rebuilds the index, with progress.
    `status` says which catalog answers and why, checks the developer token, and shows the
    offline cache, the database, its documents and any document that could not be imported.

    options:
    \(spec.optionsHelp())

    exit codes: 0 all found, 3 some IDs not found, 4 none found, 1 failure, 2 usage
    """

    static func run(_ arguments: [String]) -> ExitCode {
        switch arguments.first {
        case "import": return importDocuments(Array(arguments.dropFirst()))
        case "status": return status(Array(arguments.dropFirst()))
        default: break
        }
        let parsed: ParsedArguments
        do {
            parsed = try spec.parse(arguments)
            guard ["songs", "albums", "artists", "playlists"].contains(parsed.positionals[0]) else {
                throw UsageError(message: "unknown type \(parsed.positionals[0]) (songs, albums, artists, playlists, import, status)")
            }
            try CatalogChoice.apply(parsed)
        } catch {
            Console.error("musickit catalog: \(errorMessage(error))\n\n\(help)\n")
            return .usage
        }
        let kind = parsed.positionals[0]
        let ids = parsed.positionals.dropFirst().map { MusicItemID($0) }
        let equivalents = parsed.has("--find-equivalents")
        let storefront = parsed.option("--storefront")
        do {
            try prepareCatalog(quiet: parsed.has("--json"))
            let output = try waitFor { () async throws -> (text: String, found: Int, missing: [MusicItemID]) in
                let lookup = { () async throws -> (String, Int, [MusicItemID]) in
                    switch kind {
                    case "songs": return try await lookUp(MusicCatalogResourceRequest<Song>(matching: \.id, memberOf: ids), ids, [], equivalents, parsed.has("--json"), ItemRows.songs)
                    case "albums": return try await lookUp(MusicCatalogResourceRequest<Album>(matching: \.id, memberOf: ids), ids, [.tracks, .artists], equivalents, parsed.has("--json")) { albums in
                        albums.map { album in
                            ItemRows.albums([album]) + "\n" + (album.tracks.map { tracks in
                                tracks.map { "    \($0.trackNumber.map(String.init) ?? "-").  \($0.title)  \(duration($0.duration))" }
                                    .joined(separator: "\n")
                            } ?? "")
                        }.joined(separator: "\n\n")
                    }
                    case "artists": return try await lookUp(MusicCatalogResourceRequest<Artist>(matching: \.id, memberOf: ids), ids, [.albums], equivalents, parsed.has("--json")) { artists in
                        artists.map { artist in
                            ItemRows.artists([artist]) + "\n" + (artist.albums.map { "    albums: " + $0.map(\.title).joined(separator: ", ") } ?? "")
                        }.joined(separator: "\n\n")
                    }
                    default: return try await lookUp(MusicCatalogResourceRequest<Playlist>(matching: \.id, memberOf: ids), ids, [.tracks], equivalents, parsed.has("--json"), ItemRows.playlists)
                    }
                }
                if let storefront { return try await MusicCatalogIndex.withStorefront(storefront, operation: lookup) }
                return try await lookup()
            }
            if !output.text.isEmpty { Console.out(output.text + "\n") }
            for id in output.missing { Console.error("not in the catalog: \(kind.dropLast()) \(id)\n") }
            return output.found == 0 ? .nothingPlayable : (output.missing.isEmpty ? .success : .someEntriesFailed)
        } catch {
            Console.error("musickit catalog: \(errorMessage(error))\n")
            return .failure
        }
    }

    private static func lookUp<Item: FilterableMusicItem & Codable>(
        _ request: MusicCatalogResourceRequest<Item>, _ ids: [MusicItemID], _ properties: [PartialMusicAsyncProperty<Item>],
        _ findEquivalents: Bool, _ json: Bool, _ format: ([Item]) -> String
    ) async throws -> (String, Int, [MusicItemID]) {
        var request = request
        request.properties = properties
        if findEquivalents { request.options = [.findEquivalents] }
        let response = try await request.response()
        noteIfStale(response.answerSource)
        let missing = ids.filter { response.item(for: $0) == nil }
        let answered = ids.compactMap { id in response.item(for: id).map { (id, $0) } }
        if json {
            let requested = Dictionary(answered.map { ($0.0.rawValue, $0.1.id.rawValue) }, uniquingKeysWith: { first, _ in first })
            return (try jsonText(LookupOutput(data: Array(response.items), requested: requested)), answered.count, missing)
        }
        var text = format(Array(response.items))
        let replaced = answered.filter { $0.0 != $0.1.id }
        if !replaced.isEmpty {
            text += "\n\n" + replaced.map { "\($0.0) → \($0.1.id) (equivalent)" }.joined(separator: "\n")
        }
        return (text, answered.count, missing)
    }

    private static func importDocuments(_ paths: [String]) -> ExitCode {
        guard !paths.isEmpty, !paths.contains(where: { $0.hasPrefix("-") }) else {
            Console.error("musickit catalog import: expected FILE...\n\n\(help)\n")
            return .usage
        }
        do {
            let status = try MusicCatalogIndex.importDocuments(paths.map { URL(fileURLWithPath: $0) }) { progress in
                if progress.phase == .done {
                    if isatty(2) == 1 { Console.replaceLine("", toStandardError: true) }
                } else if isatty(2) == 1 {
                    Console.replaceLine("importing: \(progress.documentsRead)/\(progress.documentCount) documents, \(progress.resourcesWritten) items",
                                        toStandardError: true)
                }
            }
            let imported = Set(paths.map { URL(fileURLWithPath: $0).lastPathComponent })
            let own = status.documentNotes.filter { imported.contains(URL(fileURLWithPath: $0.file).lastPathComponent) }
            for note in own { Console.error("note: \(note)\n") }
            for error in status.documentErrors { Console.error("warning: not imported: \(error)\n") }
            let skipped = own.filter { $0.reason.contains("skipped") || $0.reason.contains("nothing to store") }.count
            let replaced = own.filter { $0.reason.hasPrefix("replaces ") }.count
            Console.error("imported: \(paths.count) document\(paths.count == 1 ? "" : "s"); the catalog holds "
                          + "\(status.resourceCount) items (\(replaced) replaced by these documents, \(skipped) skipped)\n")
            return .success
        } catch let error as CatalogDocumentError {
            Console.error("musickit catalog import: \(errorMessage(error))\n")
            return .failure
        } catch {
            Console.error("musickit catalog import: \(errorMessage(error))\n")
            return .failure
        }
    }

    private static let statusSpec = ArgumentSpec(flags: CatalogChoice.flags)

    private static func status(_ arguments: [String]) -> ExitCode {
        do {
            try CatalogChoice.apply(try statusSpec.parse(arguments))
        } catch {
            Console.error("musickit catalog status: \(errorMessage(error))\n\n\(help)\n")
            return .usage
        }
        do {
            let source = try MusicCatalogIndex.source()
            var healthy = true
            if source.usesAppleMusicAPI {
                Console.out("answers from: the Apple Music API (\(source.apiBaseURL.absoluteString)): \(source.reason)\n")
                do {
                    // Signed (or read) now, never shown.
                    _ = try waitFor { try await MusicDataRequest.tokenProvider.developerToken(options: []) }
                    Console.out("developer token: ready\n")
                } catch {
                    Console.out("developer token: \(error)\n")
                    healthy = false
                }
            } else {
                Console.out("answers from: the embedded catalog: \(source.reason)\n")
            }
            Console.out("offline cache: \(source.cachePath): \(source.cachedAnswers) answer\(source.cachedAnswers == 1 ? "" : "s"), "
                        + "\((source.cachedBytes + 1_023) / 1_024) KiB\n\n")
            let status = try MusicCatalogIndex.prepare()
            Console.out("""
            embedded catalog: \(status.databasePath)
            storefronts: \(status.storefronts.joined(separator: ", "))
            documents: \(status.documentPaths.count)
            \(status.documentPaths.map { "  " + $0 }.joined(separator: "\n"))
            \(status.rebuildReason.map { "rebuilt on this open: \($0)" } ?? "up to date")

            """)
            for error in status.documentErrors { Console.out("not imported: \(error)\n") }
            if !healthy { return .failure }
            return status.documentErrors.isEmpty ? .success : .someEntriesFailed
        } catch {
            Console.error("musickit catalog: \(errorMessage(error))\n")
            return .failure
        }
    }
}

/// `musickit catalog --json` output: the items, and which item answered each requested ID.
struct LookupOutput<Item: Encodable>: Encodable {
    let data: [Item]
    let requested: [String: String]
}
