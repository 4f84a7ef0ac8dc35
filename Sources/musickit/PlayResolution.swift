import AudioEngine
import Foundation
import MusicKit

/// Turns `musickit play` arguments into playable items: existing files as songs of their
/// own; catalog song, album and playlist IDs; library IDs (`i.`, `l.`, `p.`); anything else
/// is a search term whose best match (an album, a playlist or a song) is played.
enum PlayResolution {
    struct NotFound: Error, CustomStringConvertible {
        let term: String
        var description: String { "nothing in the catalog or the library matches \"\(term)\"" }
    }

    static func resolve(_ arguments: [String]) throws -> [any PlayableMusicItem] {
        var items: [any PlayableMusicItem] = []
        var words: [String] = []
        var catalogReady = false
        for argument in arguments {
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
            guard let found = try waitFor({ try await search(term) }) else { throw NotFound(term: term) }
            items.append(found.item)
        }
        return items
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

    private static func search(_ term: String) async throws -> Found? {
        var request = MusicCatalogSearchRequest(term: term, types: [Album.self, Playlist.self, Song.self])
        request.includeTopResults = true
        request.limit = 5
        let response = try await request.response()
        switch response.topResults.first {
        case .album(let album)?: return Found(item: album)
        case .playlist(let playlist)?: return Found(item: playlist)
        case .song(let song)?: return Found(item: song)
        default: return nil
        }
    }
}
