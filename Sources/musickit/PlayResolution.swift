import Foundation
import MusicKit

/// One thing `musickit play` will play: a file, with what to show for it.
struct PlayItem: Sendable {
    var path: String
    var title: String?
    var subtitle: String?
    var duration: TimeInterval?
}

/// Turns `musickit play` arguments into files: existing files as they are; catalog song,
/// album or playlist IDs; anything else is a search term whose best match (an album, a
/// playlist or a song) is played.
enum PlayResolution {
    struct NotFound: Error, CustomStringConvertible {
        let term: String
        var description: String { "nothing in the catalog matches \"\(term)\"" }
    }

    static func resolve(_ arguments: [String]) throws -> [PlayItem] {
        var items: [PlayItem] = []
        var words: [String] = []
        var catalogReady = false
        for argument in arguments {
            if FileManager.default.fileExists(atPath: argument) {
                items.append(PlayItem(path: argument))
                continue
            }
            if !catalogReady {
                try prepareCatalog()
                catalogReady = true
            }
            if looksLikeID(argument), let found = try waitFor({ try await lookUp(MusicItemID(argument)) }) {
                items += found
            } else if argument.contains("/") || argument.hasSuffix(".flac") || argument.hasSuffix(".ogg")
                        || argument.hasSuffix(".mp3") || argument.hasSuffix(".wav") {
                items.append(PlayItem(path: argument))  // a missing file: the engine reports it
            } else {
                words.append(argument)
            }
        }
        if !words.isEmpty {
            let term = words.joined(separator: " ")
            guard let found = try waitFor({ try await search(term) }), !found.isEmpty else { throw NotFound(term: term) }
            items += found
        }
        return items
    }

    private static func looksLikeID(_ text: String) -> Bool {
        text.allSatisfy(\.isNumber) || text.hasPrefix("pl.") || text.hasPrefix("i.") || text.hasPrefix("l.") || text.hasPrefix("p.")
    }

    static func items(_ songs: [Song]) -> [PlayItem] {
        songs.compactMap { song in
            guard let url = song.previewAssets?.first?.url else { return nil }
            return PlayItem(path: url.isFileURL ? url.path : url.absoluteString, title: song.title,
                            subtitle: [song.artistName, song.albumTitle].compactMap { $0 }.joined(separator: " — "),
                            duration: song.duration)
        }
    }

    private static func songs(of tracks: MusicItemCollection<Track>?) -> [Song] {
        (tracks ?? []).compactMap { if case .song(let song) = $0 { song } else { nil } }
    }

    private static func lookUp(_ id: MusicItemID) async throws -> [PlayItem]? {
        if let song = try await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: id).response().items.first {
            return items([song])
        }
        var albums = MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: id)
        albums.properties = [.tracks]
        if let album = try await albums.response().items.first { return items(songs(of: album.tracks)) }
        var playlists = MusicCatalogResourceRequest<Playlist>(matching: \.id, equalTo: id)
        playlists.properties = [.tracks]
        if let playlist = try await playlists.response().items.first { return items(songs(of: playlist.tracks)) }
        return nil
    }

    private static func search(_ term: String) async throws -> [PlayItem]? {
        var request = MusicCatalogSearchRequest(term: term, types: [Album.self, Playlist.self, Song.self])
        request.includeTopResults = true
        request.limit = 5
        let response = try await request.response()
        switch response.topResults.first {
        case .album(let album)?: return items(songs(of: try await album.with([.tracks]).tracks))
        case .playlist(let playlist)?: return items(songs(of: try await playlist.with([.tracks]).tracks))
        case .song(let song)?: return items([song])
        default: return nil
        }
    }
}
