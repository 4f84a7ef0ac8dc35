import Foundation

/// A playlist: editorial, a curator's, or the person's own.
public struct Playlist: FilterableMusicItem, PlayableMusicItem, MusicCatalogSearchable, MusicCatalogChartRequestable,
    MusicLibraryAddable, MusicPlaylistAddable, MusicPersonalRecommendationItem, MusicLibrarySearchable,
    ResourceBackedItem, Identifiable, Equatable, Hashable, Codable, Sendable, CustomStringConvertible,
    CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    public typealias FilterType = PlaylistFilter
    static let resourceTypes = ["playlists", "library-playlists"]
    public let _resource: _MusicResource
    public init(_resource: _MusicResource) { self._resource = _resource }
    public var description: String { "Playlist(id: \"\(id)\", name: \"\(name)\"\(curatorName.map { ", curatorName: \"\($0)\"" } ?? ""))" }

    /// Who makes a playlist.
    public enum Kind: Equatable, Hashable, Sendable, Codable {
        case editorial
        case external
        case personalMix
        case replay
        case userShared

        init?(apiValue: String) {
            switch apiValue {
            case "editorial": self = .editorial
            case "external": self = .external
            case "personal-mix": self = .personalMix
            case "replay": self = .replay
            case "user-shared": self = .userShared
            default: return nil
            }
        }
    }

    public var artwork: Artwork? { resource.artwork }
    public var curatorName: String? { resource.string("curatorName") }
    /// The playlist's description text ("standard" editorial notes, or a library playlist's description).
    public var standardDescription: String? {
        resource.editorialNotes?.standard ?? resource.attributes["description"]?["standard"]?.string
    }
    public var shortDescription: String? {
        resource.editorialNotes?.short ?? resource.attributes["description"]?["short"]?.string
    }
    public var isChart: Bool? { resource.bool("isChart") }
    public var kind: Playlist.Kind? { resource.string("playlistType").flatMap(Kind.init(apiValue:)) }
    public var lastModifiedDate: Date? { resource.date("lastModifiedDate") }
    public var lastPlayedDate: Date? { resource.date("lastPlayedDate") }
    public var libraryAddedDate: Date? { resource.date("dateAdded") }
    public var name: String { resource.string("name") ?? "" }
    public var playParameters: PlayParameters? { resource.playParameters }
    public var url: URL? { resource.url("url") }

    public var curator: Curator? { resource.related("curator", as: Curator.self)?.first }
    /// The playlist's entries, in order, from its tracks.
    public var entries: MusicItemCollection<Playlist.Entry>? {
        guard let tracks = resource.relationships["tracks"] else { return nil }
        let entries = tracks.data.enumerated().map { Playlist.Entry(resource: $1, position: $0) }
        return MusicItemCollection(items: entries, title: nil, next: tracks.next)
    }
    public var featuredArtists: MusicItemCollection<Artist>? { resource.view("featured-artists") }
    public var moreByCurator: MusicItemCollection<Playlist>? { resource.view("more-by-curator") }
    public var radioShow: RadioShow? { resource.related("radio-show", as: RadioShow.self)?.first }
    public var tracks: MusicItemCollection<Track>? { resource.related("tracks") }

    /// One position of a playlist: a song or a music video.
    public struct Entry: _MusicTrackAttributes, MusicItem, Identifiable, Equatable, Hashable, Sendable, Codable, CustomStringConvertible,
        CustomDebugStringConvertible {
        public typealias ID = MusicItemID
        public typealias LibraryFilter = LibraryPlaylistEntryFilter
        public typealias LibrarySortProperties = LibraryPlaylistEntrySortProperties

        let resource: ResourceObject
        public let id: MusicItemID
        /// The entry's position in the playlist, from 0.
        public let position: Int

        init(resource: ResourceObject, position: Int) {
            self.resource = resource
            self.position = position
            id = MusicItemID(resource.id)
        }

        public init(from decoder: any Decoder) throws {
            resource = try ResourceObject(from: decoder)
            id = MusicItemID(resource.id)
            position = resource.meta?["position"]?.int ?? 0
        }

        public func encode(to encoder: any Encoder) throws { try resource.encode(to: encoder) }
        public var _resource: _MusicResource { _MusicResource(resource) }
        public var description: String { "Playlist.Entry(id: \"\(id)\", title: \"\(title)\", artistName: \"\(artistName)\")" }
        public var debugDescription: String {
            "Playlist.Entry(id: \"\(id)\", position: \(position), title: \"\(title)\", artistName: \"\(artistName)\", "
                + "item: \(item.map { "\($0)" } ?? "nil"))"
        }

        /// What the entry holds.
        public enum Item: _MusicTrackAttributes, MusicItem, Equatable, Hashable, Sendable, Codable, CustomStringConvertible, CustomDebugStringConvertible {
            public typealias ID = MusicItemID
            case musicVideo(MusicVideo)
            case song(Song)

            public var id: MusicItemID {
                switch self { case .song(let song): song.id; case .musicVideo(let video): video.id }
            }
            var resource: ResourceObject { _resource.object }
            public var _resource: _MusicResource {
                switch self { case .song(let song): song._resource; case .musicVideo(let video): video._resource }
            }
            public var description: String {
                switch self { case .song(let song): song.description; case .musicVideo(let video): video.description }
            }
            public var debugDescription: String {
                switch self { case .song(let song): song.debugDescription; case .musicVideo(let video): video.debugDescription }
            }

            /// Decodes a song or a music video resource (by its `type`).
            public init(from decoder: any Decoder) throws {
                switch try Track(from: decoder) {
                case .song(let song): self = .song(song)
                case .musicVideo(let video): self = .musicVideo(video)
                }
            }

            public func encode(to encoder: any Encoder) throws {
                switch self { case .song(let song): try song.encode(to: encoder); case .musicVideo(let video): try video.encode(to: encoder) }
            }

        }

        public var item: Playlist.Entry.Item? {
            switch resource.type {
            case "music-videos", "library-music-videos": .musicVideo(MusicVideo(resource: resource))
            case "songs", "library-songs", "": .song(Song(resource: resource))
            default: nil
            }
        }
    }
}

/// What `MusicCatalogResourceRequest<Playlist>` can match on.
public protocol PlaylistFilter {
    var id: MusicItemID { get }
}
extension Playlist: PlaylistFilter {}

/// A song or a music video of an album or a playlist.
public enum Track: _MusicTrackAttributes, MusicItem, ResourceBackedItem, Identifiable, Equatable, Hashable, Codable, Sendable,
    CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    case musicVideo(MusicVideo)
    case song(Song)

    static let resourceTypes = ["songs", "library-songs", "music-videos", "library-music-videos"]

    public init(_resource: _MusicResource) {
        switch _resource.object.type {
        case "music-videos", "library-music-videos": self = .musicVideo(MusicVideo(_resource: _resource))
        default: self = .song(Song(_resource: _resource))
        }
    }

    public var _resource: _MusicResource {
        switch self { case .song(let song): song._resource; case .musicVideo(let video): video._resource }
    }

    public var description: String {
        switch self { case .song(let song): "Track.song(\(song))"; case .musicVideo(let video): "Track.musicVideo(\(video))" }
    }

    public var discNumber: Int? { resource.int("discNumber") }
    /// The custom start time of the track (its song's or music video's), nil for none.
    public var startTime: TimeInterval? { resource.customStartTime }
    /// The custom end time of the track, nil for none.
    public var endTime: TimeInterval? { resource.customEndTime }
    public var trackNumber: Int? { resource.int("trackNumber") }
    public var workName: String? { resource.string("workName") }
    public var albums: MusicItemCollection<Album>? { resource.related("albums") }
    public var artists: MusicItemCollection<Artist>? { resource.related("artists") }
    public var genres: MusicItemCollection<Genre>? { resource.related("genres") }
}

extension Track: PlayableMusicItem {}

// Apple's conformances of tracks and a playlist's entries: they play (a queue takes them), and
// can be added to the library and to a playlist as the song or video they hold (an album or a
// playlist added to a playlist adds its tracks: `MusicLibrary.add(_:to:)`); a library request
// for entries answers those of the library's playlists.
extension Track: MusicLibraryAddable, MusicPlaylistAddable {}
extension Playlist.Entry: PlayableMusicItem, MusicLibraryRequestable, MusicLibraryAddable, MusicPlaylistAddable {}
extension Playlist.Entry.Item: PlayableMusicItem, Identifiable {}

extension Curator {
    /// Who a curator is.
    public enum Kind: Equatable, Hashable, Sendable, Codable {
        case editorial
        case external
    }
}
