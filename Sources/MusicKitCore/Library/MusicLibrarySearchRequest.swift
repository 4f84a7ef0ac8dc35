import Foundation

/// Searches the person's library for a term, across item types, as in Apple's MusicKit.
///
/// ```swift
/// var request = MusicLibrarySearchRequest(term: "gapless", types: [Song.self, Album.self])
/// request.includeTopResults = true
/// let response = try await request.response()
/// response.songs.first?.title
/// ```
///
/// A term matches an item when every word of it appears (case and accents folded) in the
/// item's name, artist or album. Results are ranked: the whole name first, then names that start
/// with the term, then names with a word that starts with it, then the rest; ties by name.
public struct MusicLibrarySearchRequest: Equatable, Hashable, Sendable {
    public let term: String
    public private(set) var types: [any MusicLibrarySearchable.Type]
    /// At most this many items of each type (and top results).
    public var limit: Int = 25
    /// Also answer the best matches across the types, in `topResults`.
    public var includeTopResults: Bool = false

    public init(term: String, types: [any MusicLibrarySearchable.Type]) {
        self.term = term
        self.types = types
    }

    /// Runs the search. Throws `MusicLibrary.Error.permissionDenied` unless the app is authorized.
    public func response() async throws -> MusicLibrarySearchResponse {
        let service = try MusicLibrary.authorizedService()
        let words = term.split(whereSeparator: \.isWhitespace).map { MusicLibraryService.IndexedResource.fold(String($0)) }
        let whole = MusicLibraryService.IndexedResource.fold(term.trimmingCharacters(in: .whitespaces))
        let count = max(limit, 0)
        var response = MusicLibrarySearchResponse()
        var ranked: [(rank: Int, name: String, result: MusicLibrarySearchResponse.TopResult)] = []
        for type in types {
            guard let backed = type as? any LibraryRequestBacked.Type, !words.isEmpty else { continue }
            let matches = try service.indexedItems(backed.libraryType).compactMap { entry -> (Int, String, ResourceObject)? in
                let fields = ["name", "artistName", "albumName", LibraryAttributes.albumArtist].compactMap { entry.folded[$0] }
                guard words.allSatisfy({ word in fields.contains { MusicLibraryService.IndexedResource.contains($0, word) } }) else {
                    return nil
                }
                let name = entry.folded["name"] ?? ""
                return (Self.rank(name: name, whole: whole), name, entry.resource)
            }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.prefix(count)
            let resources = matches.map(\.2)
            switch backed.libraryType {
            case "songs": response.songs = MusicItemCollection(items: resources.map(Song.init(resource:)))
            case "albums": response.albums = MusicItemCollection(items: resources.map(Album.init(resource:)))
            case "artists": response.artists = MusicItemCollection(items: resources.map(Artist.init(resource:)))
            case "playlists": response.playlists = MusicItemCollection(items: resources.map(Playlist.init(resource:)))
            case "music-videos": response.musicVideos = MusicItemCollection(items: resources.map(MusicVideo.init(resource:)))
            default: continue
            }
            if includeTopResults {
                ranked += matches.compactMap { match in MusicLibrarySearchResponse.TopResult(resource: match.2).map { (match.0, match.1, $0) } }
            }
        }
        if includeTopResults {
            // Stable: among equal ranks and names, the order of `types` decides.
            let best = ranked.enumerated().sorted { ($0.element.rank, $0.element.name, $0.offset) < ($1.element.rank, $1.element.name, $1.offset) }
            response.topResults = MusicItemCollection(items: best.prefix(count).map(\.element.result))
        }
        return response
    }

    /// 0: the name is the term; 1: it starts with it; 2: a word of it does; 3: the term is elsewhere.
    private static func rank(name: String, whole: String) -> Int {
        if name == whole { return 0 }
        if name.hasPrefix(whole) { return 1 }
        if name.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).contains(where: { $0.hasPrefix(whole) }) { return 2 }
        return 3
    }

    public static func == (a: MusicLibrarySearchRequest, b: MusicLibrarySearchRequest) -> Bool {
        a.term == b.term && a.limit == b.limit && a.includeTopResults == b.includeTopResults
            && a.types.map(ObjectIdentifier.init) == b.types.map(ObjectIdentifier.init)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(term)
        hasher.combine(limit)
        hasher.combine(includeTopResults)
        for type in types { hasher.combine(ObjectIdentifier(type)) }
    }
}

/// What a library search found, by type, and the best matches across types.
public struct MusicLibrarySearchResponse: Equatable, Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public internal(set) var albums: MusicItemCollection<Album> = []
    public internal(set) var artists: MusicItemCollection<Artist> = []
    public internal(set) var musicVideos: MusicItemCollection<MusicVideo> = []
    public internal(set) var playlists: MusicItemCollection<Playlist> = []
    public internal(set) var songs: MusicItemCollection<Song> = []
    public internal(set) var topResults: MusicItemCollection<TopResult> = []

    init() {}

    public var description: String {
        let parts = [("songs", songs.count), ("albums", albums.count), ("artists", artists.count), ("playlists", playlists.count),
                     ("musicVideos", musicVideos.count), ("topResults", topResults.count)]
            .filter { $0.1 > 0 }.map { "\($0.0): \($0.1)" }
        return "MusicLibrarySearchResponse(\(parts.joined(separator: ", ")))"
    }

    public var debugDescription: String {
        "MusicLibrarySearchResponse(songs: \(songs.debugDescription), albums: \(albums.debugDescription), "
            + "artists: \(artists.debugDescription), playlists: \(playlists.debugDescription), "
            + "musicVideos: \(musicVideos.debugDescription), topResults: \(topResults.debugDescription))"
    }

    /// One of the best matches, of any type.
    public enum TopResult: _MusicResourceUnion, MusicItem, Identifiable, Equatable, Hashable, Sendable, Codable, CustomStringConvertible,
        CustomDebugStringConvertible {
        public typealias ID = MusicItemID
        case album(Album)
        case artist(Artist)
        case musicVideo(MusicVideo)
        case playlist(Playlist)
        case song(Song)

        public init?(_resource: _MusicResource) {
            let resource = _resource.object
            switch resource.type {
            case "albums", "library-albums": self = .album(Album(resource: resource))
            case "artists", "library-artists": self = .artist(Artist(resource: resource))
            case "music-videos", "library-music-videos": self = .musicVideo(MusicVideo(resource: resource))
            case "playlists", "library-playlists": self = .playlist(Playlist(resource: resource))
            case "songs", "library-songs": self = .song(Song(resource: resource))
            default: return nil
            }
        }

        public var _resource: _MusicResource {
            switch self {
            case .album(let item): item._resource
            case .artist(let item): item._resource
            case .musicVideo(let item): item._resource
            case .playlist(let item): item._resource
            case .song(let item): item._resource
            }
        }
    }
}
