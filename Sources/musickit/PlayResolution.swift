import PlatformSupport
import AudioEngine
import Foundation
import MusicKitCore

/// Turns `musickit play` arguments into playable items: existing files as songs of their
/// own; a folder as its audio files (its subfolders' too) in path order; catalog song, album
/// and playlist IDs; library IDs (`i.`, `l.`, `p.`); anything else is a search term: the
/// library's album whose title or artist matches it, else the library's songs that match,
/// else the catalog's best match (an album, a playlist or a song).
enum PlayResolution {
    struct NotFound: Error, CustomStringConvertible {
        let term: String
        var description: String { "nothing in the catalog or the library matches \"\(term)\"" }
    }

    struct EmptyFolder: Error, CustomStringConvertible {
        let path: String
        var description: String { "no audio files in the folder \(path)" }
    }

    static func resolve(_ arguments: [String]) throws -> [any PlayableMusicItem] {
        var items: [any PlayableMusicItem] = []
        var words: [String] = []
        var catalogReady = false
        for argument in arguments {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: argument, isDirectory: &isFolder), isFolder.boolValue {
                let files = audioFiles(in: argument)
                guard !files.isEmpty else { throw EmptyFolder(path: argument) }
                items += files.map { Song(filePath: $0) }
                continue
            }
            if isFile(argument) {
                // A missing file still becomes an entry: the player skips it and says why.
                items.append(Song(filePath: argument))
                continue
            }
            if !catalogReady {
                try prepareCatalog()
                catalogReady = true
            }
            if looksLikeID(argument) {
                let id = MusicItemID(argument)
                if let found = try waitFor({ try await lookUp(id) }) {
                    items.append(found.item)
                    continue
                }
                throw NotFound(term: argument)
            }
            words.append(argument)
        }
        if !words.isEmpty {
            let term = words.joined(separator: " ")
            let found = try waitFor({ try await search(term) })
            guard !found.isEmpty else { throw NotFound(term: term) }
            items += found.map(\.item)
        }
        return items
    }

    /// The audio files (by extension) under `folder`, in path order: an album's folder plays in
    /// track order when its files are numbered, as mpv and cmus play a folder.
    static func audioFiles(in folder: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return [] }
        var files: [String] = []
        while let relative = walker.nextObject() as? String {
            guard AudioFileDecoder.fileExtensions.contains((relative as NSString).pathExtension.lowercased()) else { continue }
            let path = (folder as NSString).appendingPathComponent(relative)
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue { files.append(path) }
        }
        return files.sorted { $0.localizedStandardCompare($1) == .orderedAscending }
    }

    /// An existing file, or what can only be meant as one (a path, an audio extension).
    static func isFile(_ text: String) -> Bool {
        FileManager.default.fileExists(atPath: text) || text.contains("/")
            || AudioFileDecoder.fileExtensions.contains((text as NSString).pathExtension.lowercased())
    }

    private static func looksLikeID(_ text: String) -> Bool {
        text.allSatisfy(\.isNumber) || text.hasPrefix("pl.") || text.hasPrefix("i.") || text.hasPrefix("l.") || text.hasPrefix("p.")
    }

    /// A resolved item (boxed: `any PlayableMusicItem` crosses the task boundary).
    struct Found: @unchecked Sendable {
        // @unchecked: every PlayableMusicItem of this framework is a Sendable value type.
        let item: any PlayableMusicItem
    }

    private static func lookUp(_ id: MusicItemID) async throws -> Found? {
        if ["i.", "l.", "p."].contains(where: { id.rawValue.hasPrefix($0) }) { return try await lookUpInLibrary(id) }
        if let song = try await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: id).response().items.first {
            return Found(item: song)
        }
        if let album = try await MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: id).response().items.first {
            return Found(item: album)
        }
        if let playlist = try await MusicCatalogResourceRequest<Playlist>(matching: \.id, equalTo: id).response().items.first {
            return Found(item: playlist)
        }
        return nil
    }

    private static func lookUpInLibrary(_ id: MusicItemID) async throws -> Found? {
        if id.rawValue.hasPrefix("i.") {
            var request = MusicLibraryRequest<Song>()
            request.filter(matching: \.id, equalTo: id)
            return try await request.response().items.first.map { Found(item: $0) }
        }
        if id.rawValue.hasPrefix("l.") {
            var request = MusicLibraryRequest<Album>()
            request.filter(matching: \.id, equalTo: id)
            return try await request.response().items.first.map { Found(item: $0) }
        }
        var request = MusicLibraryRequest<Playlist>()
        request.filter(matching: \.id, equalTo: id)
        return try await request.response().items.first.map { Found(item: $0) }
    }

    private static func search(_ term: String) async throws -> [Found] {
        if let found = await searchLibrary(term) { return found }
        var request = MusicCatalogSearchRequest(term: term, types: [Album.self, Playlist.self, Song.self])
        request.includeTopResults = true
        request.limit = 5
        let response = try await request.response()
        switch response.topResults.first {
        case .album(let album)?: return [Found(item: album)]
        case .playlist(let playlist)?: return [Found(item: playlist)]
        case .song(let song)?: return [Found(item: song)]
        default: return []
        }
    }

    /// The person's own music first: an album whose title or artist contains the term (the
    /// first such, by title), else every song that matches, in the library's order (folder,
    /// then file). Nil when nothing does or the library cannot be read (not authorized).
    private static func searchLibrary(_ term: String) async -> [Found]? {
        guard let response = try? await MusicLibrarySearchRequest(term: term, types: [Album.self, Song.self]).response() else {
            return nil
        }
        let wanted = term.foldedForSearch
        if let album = response.albums.first(where: { $0.title.foldedForSearch.contains(wanted) || $0.artistName.foldedForSearch.contains(wanted) }) {
            return [Found(item: album)]
        }
        let songs = Song.inLibraryOrder(Array(response.songs))
        return songs.isEmpty ? nil : songs.map { Found(item: $0) }
    }
}
