import Foundation

// The types Apple's recently-played requests take: songs, music videos and tracks (either),
// stations, and `RecentlyPlayedMusicItem` (the containers). Not albums or playlists on their own.
extension Song: MusicRecentlyPlayedRequestable {}
extension MusicVideo: MusicRecentlyPlayedRequestable {}
extension Track: MusicRecentlyPlayedRequestable {}

/// The person's recently played items, newest first, each once: songs
/// (`MusicRecentlyPlayedRequest<Song>`; `<Track>` as tracks, `<MusicVideo>` the videos, which this
/// player does not play), or the albums, playlists and stations they were played from
/// (`MusicRecentlyPlayedContainerRequest`; `<Station>` the stations alone).
///
/// The history is written by `ApplicationMusicPlayer` as entries are heard, unless the queue's
/// `affectsListeningHistory` or the account's "Use Listening History" is off. Needs
/// authorization, like the library.
public struct MusicRecentlyPlayedRequest<MusicItemType>: Sendable
    where MusicItemType: MusicRecentlyPlayedRequestable, MusicItemType: Decodable {
    /// How many items (default 10, at most 100).
    public var limit: Int?
    /// How many of the newest items to skip.
    public var offset: Int?

    public init() {}

    public func response() async throws -> MusicRecentlyPlayedResponse<MusicItemType> {
        let service = try MusicLibrary.authorizedService()
        let (containers, types) = MusicRecentlyPlayedRequest.source
        let limit = min(max(self.limit ?? 10, 1), 100)
        let resources = try service.withStore {
            try $0.recentlyPlayed(containers: containers, types: types, limit: limit, offset: max(offset ?? 0, 0))
        }
        let items = resources.compactMap(MusicRecentlyPlayedRequest.item)
        return MusicRecentlyPlayedResponse(items: MusicItemCollection(items: items))
    }

    /// Where in the history the items come from: the entries (songs) or their containers.
    private static var source: (containers: Bool, types: Set<String>) {
        switch MusicItemType.self {
        case is Song.Type: (false, ["songs", "library-songs"])
        case is MusicVideo.Type: (false, ["music-videos", "library-music-videos"])
        case is Track.Type: (false, Set(Track.resourceTypes))
        case is Station.Type: (true, ["stations"])
        default: (true, ["albums", "library-albums", "playlists", "library-playlists", "stations"])
        }
    }

    private static func item(_ resource: ResourceObject) -> MusicItemType? {
        if let backed = MusicItemType.self as? any ResourceBackedItem.Type {
            return backed.init(resource: resource) as? MusicItemType
        }
        return RecentlyPlayedMusicItem(resource: resource) as? MusicItemType
    }
}

public typealias MusicRecentlyPlayedContainerRequest = MusicRecentlyPlayedRequest<RecentlyPlayedMusicItem>
public typealias MusicRecentlyPlayedContainerResponse = MusicRecentlyPlayedResponse<RecentlyPlayedMusicItem>

/// The answer to a `MusicRecentlyPlayedRequest`.
public struct MusicRecentlyPlayedResponse<MusicItemType>: Sendable, CustomStringConvertible, CustomDebugStringConvertible
    where MusicItemType: MusicRecentlyPlayedRequestable {
    public let items: MusicItemCollection<MusicItemType>

    init(items: MusicItemCollection<MusicItemType>) {
        self.items = items
    }

    public var description: String { "MusicRecentlyPlayedResponse<\(MusicItemType.self)>(items: \(items))" }
    public var debugDescription: String { description }
}

extension MusicRecentlyPlayedResponse: Equatable where MusicItemType: Equatable {}
extension MusicRecentlyPlayedResponse: Hashable where MusicItemType: Hashable {}

extension MusicRecentlyPlayedResponse: Decodable where MusicItemType: Decodable {
    public init(from decoder: any Decoder) throws {
        items = try MusicItemCollection<MusicItemType>(from: decoder)
    }
}

extension MusicRecentlyPlayedResponse: Encodable where MusicItemType: Encodable {
    public func encode(to encoder: any Encoder) throws { try items.encode(to: encoder) }
}

/// A recently played album, playlist or station.
public enum RecentlyPlayedMusicItem: _MusicResourceUnion, MusicItem, MusicRecentlyPlayedRequestable, PlayableMusicItem, Identifiable, Equatable, Hashable, Codable,
    Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    case album(Album)
    case playlist(Playlist)
    case station(Station)

    public init?(_resource: _MusicResource) {
        let resource = _resource.object
        switch resource.type {
        case "albums", "library-albums": self = .album(Album(resource: resource))
        case "playlists", "library-playlists": self = .playlist(Playlist(resource: resource))
        case "stations": self = .station(Station(resource: resource))
        default: return nil
        }
    }

    public var _resource: _MusicResource {
        switch self {
        case .album(let album): album._resource
        case .playlist(let playlist): playlist._resource
        case .station(let station): station._resource
        }
    }

    /// The album's artist, the playlist's curator.
    public var subtitle: String? { resource.containerSubtitle }
    public var playParameters: PlayParameters? { resource.playParameters }
    public var description: String {
        switch self {
        case .album(let album): "RecentlyPlayedMusicItem.album(\(album))"
        case .playlist(let playlist): "RecentlyPlayedMusicItem.playlist(\(playlist))"
        case .station(let station): "RecentlyPlayedMusicItem.station(\(station))"
        }
    }
}
