// The catalog item types: each struct is a view over one Apple Music API resource object
// (attributes read on demand, relationships and views decoded into collections). What they share
// (identity, Codable, equality, the track attributes) is written once in MusicItem.swift.
import Foundation

/// A song, from the catalog or the person's library.
public struct Song: _MusicTrackAttributes, FilterableMusicItem, PlayableMusicItem, MusicCatalogSearchable, MusicCatalogChartRequestable, MusicLibraryAddable, MusicPlaylistAddable, MusicLibrarySearchable, ResourceBackedItem, Identifiable, Equatable, Hashable, Codable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    public typealias FilterType = SongFilter
    static let resourceTypes = ["songs", "library-songs"]
    public let _resource: _MusicResource
    public init(_resource: _MusicResource) { self._resource = _resource }
    public var description: String { "Song(id: \"\(id)\", title: \"\(title)\", artistName: \"\(artistName)\")" }

    public var attribution: String? { resource.string("attribution") }
    public var audioVariants: [AudioVariant]? { resource.audioVariants }
    public var composerName: String? { resource.string("composerName") }
    public var discNumber: Int? { resource.int("discNumber") }
    /// The custom start time for the song (where the player starts it), nil for none.
    public var startTime: TimeInterval? { resource.customStartTime }
    /// The custom end time for the song (where the player ends it), nil for none.
    public var endTime: TimeInterval? { resource.customEndTime }
    public var hasLyrics: Bool { resource.bool("hasLyrics") ?? false }
    public var isAppleDigitalMaster: Bool? { resource.bool("isAppleDigitalMaster") }
    public var movementCount: Int? { resource.int("movementCount") }
    public var movementName: String? { resource.string("movementName") }
    public var movementNumber: Int? { resource.int("movementNumber") }
    public var trackNumber: Int? { resource.int("trackNumber") }
    public var workName: String? { resource.string("workName") }
    public var albums: MusicItemCollection<Album>? { resource.related("albums") }
    public var artists: MusicItemCollection<Artist>? { resource.related("artists") }
    public var composers: MusicItemCollection<Artist>? { resource.related("composers") }
    public var genres: MusicItemCollection<Genre>? { resource.related("genres") }
    public var musicVideos: MusicItemCollection<MusicVideo>? { resource.related("music-videos") }
    public var station: Station? { resource.related("station", as: Station.self)?.first }
}

/// What `MusicCatalogResourceRequest<Song>` can match on.
public protocol SongFilter {
    var id: MusicItemID { get }
    var isrc: String? { get }
}
extension Song: SongFilter {}

/// An album: its tracks, artists and editions.
public struct Album: FilterableMusicItem, PlayableMusicItem, MusicCatalogSearchable, MusicCatalogChartRequestable, MusicLibraryAddable, MusicPlaylistAddable, MusicPersonalRecommendationItem, MusicLibrarySearchable, ResourceBackedItem, Identifiable, Equatable, Hashable, Codable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    public typealias FilterType = AlbumFilter
    static let resourceTypes = ["albums", "library-albums"]
    public let _resource: _MusicResource
    public init(_resource: _MusicResource) { self._resource = _resource }
    public var description: String { "Album(id: \"\(id)\", title: \"\(title)\", artistName: \"\(artistName)\")" }

    public var artistName: String { resource.string("artistName") ?? "" }
    public var artistURL: URL? { resource.url("artistUrl") }
    public var artwork: Artwork? { resource.artwork }
    public var audioVariants: [AudioVariant]? { resource.audioVariants }
    public var contentRating: ContentRating? { resource.contentRating }
    public var copyright: String? { resource.string("copyright") }
    public var editorialNotes: EditorialNotes? { resource.editorialNotes }
    public var genreNames: [String] { resource.strings("genreNames") ?? [] }
    public var isAppleDigitalMaster: Bool? { resource.bool("isAppleDigitalMaster") }
    public var isCompilation: Bool? { resource.bool("isCompilation") }
    public var isComplete: Bool? { resource.bool("isComplete") }
    public var isSingle: Bool? { resource.bool("isSingle") }
    public var lastPlayedDate: Date? { resource.date("lastPlayedDate") }
    public var libraryAddedDate: Date? { resource.date("dateAdded") }
    public var playParameters: PlayParameters? { resource.playParameters }
    public var recordLabelName: String? { resource.string("recordLabel") }
    public var releaseDate: Date? { resource.date("releaseDate") }
    public var title: String { resource.string("name") ?? "" }
    public var trackCount: Int { resource.int("trackCount") ?? resource.relationships["tracks"]?.data.count ?? 0 }
    public var upc: String? { resource.string("upc") }
    public var url: URL? { resource.url("url") }
    public var appearsOn: MusicItemCollection<Playlist>? { resource.view("appears-on") }
    public var artists: MusicItemCollection<Artist>? { resource.related("artists") }
    public var genres: MusicItemCollection<Genre>? { resource.related("genres") }
    public var otherVersions: MusicItemCollection<Album>? { resource.view("other-versions") }
    public var recordLabels: MusicItemCollection<RecordLabel>? { resource.related("record-labels") }
    public var relatedAlbums: MusicItemCollection<Album>? { resource.view("related-albums") }
    public var relatedVideos: MusicItemCollection<MusicVideo>? { resource.view("related-videos") }
    public var tracks: MusicItemCollection<Track>? { resource.related("tracks") }
}

/// What `MusicCatalogResourceRequest<Album>` can match on.
public protocol AlbumFilter {
    var id: MusicItemID { get }
    var upc: String? { get }
}
extension Album: AlbumFilter {}

/// An artist: their albums, songs and stations.
public struct Artist: FilterableMusicItem, MusicCatalogSearchable, MusicLibrarySearchable, ResourceBackedItem, Identifiable, Equatable, Hashable, Codable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    public typealias FilterType = ArtistFilter
    static let resourceTypes = ["artists", "library-artists"]
    public let _resource: _MusicResource
    public init(_resource: _MusicResource) { self._resource = _resource }
    public var description: String { "Artist(id: \"\(id)\", name: \"\(name)\")" }

    public var artwork: Artwork? { resource.artwork }
    public var editorialNotes: EditorialNotes? { resource.editorialNotes }
    public var genreNames: [String]? { resource.strings("genreNames") }
    public var libraryAddedDate: Date? { resource.date("dateAdded") }
    public var name: String { resource.string("name") ?? "" }
    public var url: URL? { resource.url("url") }
    public var albums: MusicItemCollection<Album>? { resource.related("albums") }
    public var appearsOnAlbums: MusicItemCollection<Album>? { resource.view("appears-on-albums") }
    public var compilationAlbums: MusicItemCollection<Album>? { resource.view("compilation-albums") }
    public var featuredAlbums: MusicItemCollection<Album>? { resource.view("featured-albums") }
    public var featuredPlaylists: MusicItemCollection<Playlist>? { resource.view("featured-playlists") }
    public var fullAlbums: MusicItemCollection<Album>? { resource.view("full-albums") }
    public var genres: MusicItemCollection<Genre>? { resource.related("genres") }
    public var latestRelease: Album? { resource.view("latest-release", as: Album.self)?.first }
    public var liveAlbums: MusicItemCollection<Album>? { resource.view("live-albums") }
    public var musicVideos: MusicItemCollection<MusicVideo>? { resource.related("music-videos") }
    public var playlists: MusicItemCollection<Playlist>? { resource.related("playlists") }
    public var similarArtists: MusicItemCollection<Artist>? { resource.view("similar-artists") }
    public var singles: MusicItemCollection<Album>? { resource.view("singles") }
    public var station: Station? { resource.related("station", as: Station.self)?.first }
    public var topMusicVideos: MusicItemCollection<MusicVideo>? { resource.view("top-music-videos") }
    public var topSongs: MusicItemCollection<Song>? { resource.view("top-songs") }
}

/// What `MusicCatalogResourceRequest<Artist>` can match on.
public protocol ArtistFilter {
    var id: MusicItemID { get }
}
extension Artist: ArtistFilter {}

/// A radio station.
public struct Station: FilterableMusicItem, PlayableMusicItem, MusicCatalogSearchable, MusicRecentlyPlayedRequestable, MusicPersonalRecommendationItem, ResourceBackedItem, Identifiable, Equatable, Hashable, Codable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    public typealias FilterType = StationFilter
    static let resourceTypes = ["stations"]
    public let _resource: _MusicResource
    public init(_resource: _MusicResource) { self._resource = _resource }
    public var description: String { "Station(id: \"\(id)\", name: \"\(name)\")" }

    public var artwork: Artwork? { resource.artwork }
    public var contentRating: ContentRating? { resource.contentRating }
    public var duration: TimeInterval? { resource.duration() }
    public var editorialNotes: EditorialNotes? { resource.editorialNotes }
    public var episodeNumber: Int? { resource.int("episodeNumber") }
    public var isLive: Bool { resource.bool("isLive") ?? false }
    public var name: String { resource.string("name") ?? "" }
    public var playParameters: PlayParameters? { resource.playParameters }
    public var stationProviderName: String? { resource.string("stationProviderName") }
    public var url: URL? { resource.url("url") }
}

/// What `MusicCatalogResourceRequest<Station>` can match on.
public protocol StationFilter {
    var id: MusicItemID { get }
}
extension Station: StationFilter {}

/// A music genre.
public struct Genre: FilterableMusicItem, MusicCatalogTopLevelResourceRequesting, ResourceBackedItem, Identifiable, Equatable, Hashable, Codable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    public typealias FilterType = GenreFilter
    static let resourceTypes = ["genres", "library-genres"]
    public let _resource: _MusicResource
    public init(_resource: _MusicResource) { self._resource = _resource }
    public var description: String { "Genre(id: \"\(id)\", name: \"\(name)\")" }

    public var libraryAddedDate: Date? { resource.date("dateAdded") }
    public var name: String { resource.string("name") ?? "" }
    public var parent: Genre? { resource.attributes["parentId"]?.string.map { Genre(resource: ResourceObject(id: $0, type: "genres", attributes: resource.attributes["parentName"]?.string.map { ["name": .string($0)] } ?? [:])) } }
}

/// What `MusicCatalogResourceRequest<Genre>` can match on.
public protocol GenreFilter {
    var id: MusicItemID { get }
}
extension Genre: GenreFilter {}

/// A music video.
public struct MusicVideo: _MusicTrackAttributes, FilterableMusicItem, PlayableMusicItem, MusicCatalogSearchable, MusicCatalogChartRequestable, MusicLibraryAddable, MusicPlaylistAddable, MusicLibrarySearchable, ResourceBackedItem, Identifiable, Equatable, Hashable, Codable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    public typealias FilterType = MusicVideoFilter
    static let resourceTypes = ["music-videos", "library-music-videos"]
    public let _resource: _MusicResource
    public init(_resource: _MusicResource) { self._resource = _resource }
    public var description: String { "MusicVideo(id: \"\(id)\", title: \"\(title)\", artistName: \"\(artistName)\")" }

    /// The custom start time for the music video (where the player starts it), nil for none.
    public var startTime: TimeInterval? { resource.customStartTime }
    /// The custom end time for the music video (where the player ends it), nil for none.
    public var endTime: TimeInterval? { resource.customEndTime }
    public var has4K: Bool? { resource.bool("has4K") }
    public var hasHDR: Bool? { resource.bool("hasHDR") }
    public var isPreview: Bool { resource.bool("isPreview") ?? false }
    public var trackNumber: Int? { resource.int("trackNumber") }
    public var workName: String? { resource.string("workName") }
    public var albums: MusicItemCollection<Album>? { resource.related("albums") }
    public var artists: MusicItemCollection<Artist>? { resource.related("artists") }
    public var genres: MusicItemCollection<Genre>? { resource.related("genres") }
    public var moreByArtist: MusicItemCollection<MusicVideo>? { resource.view("more-by-artist") }
    public var moreInGenre: MusicItemCollection<MusicVideo>? { resource.view("more-in-genre") }
    public var songs: MusicItemCollection<Song>? { resource.related("songs") }
}

/// What `MusicCatalogResourceRequest<MusicVideo>` can match on.
public protocol MusicVideoFilter {
    var id: MusicItemID { get }
    var isrc: String? { get }
}
extension MusicVideo: MusicVideoFilter {}

/// Someone who makes playlists: an Apple Music editor or an outside curator.
public struct Curator: FilterableMusicItem, MusicCatalogSearchable, ResourceBackedItem, Identifiable, Equatable, Hashable, Codable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    public typealias FilterType = CuratorFilter
    static let resourceTypes = ["curators", "apple-curators"]
    public let _resource: _MusicResource
    public init(_resource: _MusicResource) { self._resource = _resource }
    public var description: String { "Curator(id: \"\(id)\", name: \"\(name)\")" }

    public var artwork: Artwork? { resource.artwork }
    public var editorialNotes: EditorialNotes? { resource.editorialNotes }
    public var kind: Curator.Kind { resource.type == "apple-curators" ? .editorial : .external }
    public var name: String { resource.string("name") ?? "" }
    public var url: URL? { resource.url("url") }
    public var playlists: MusicItemCollection<Playlist>? { resource.related("playlists") }
}

/// What `MusicCatalogResourceRequest<Curator>` can match on.
public protocol CuratorFilter {
    var id: MusicItemID { get }
}
extension Curator: CuratorFilter {}

/// A radio show.
public struct RadioShow: FilterableMusicItem, MusicCatalogSearchable, ResourceBackedItem, Identifiable, Equatable, Hashable, Codable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    public typealias FilterType = RadioShowFilter
    static let resourceTypes = ["radio-shows"]
    public let _resource: _MusicResource
    public init(_resource: _MusicResource) { self._resource = _resource }
    public var description: String { "RadioShow(id: \"\(id)\", name: \"\(name)\")" }

    public var artwork: Artwork? { resource.artwork }
    public var editorialNotes: EditorialNotes? { resource.editorialNotes }
    public var hostName: String? { resource.string("hostName") }
    public var name: String { resource.string("name") ?? "" }
    public var url: URL? { resource.url("url") }
    public var playlists: MusicItemCollection<Playlist>? { resource.related("playlists") }
}

/// What `MusicCatalogResourceRequest<RadioShow>` can match on.
public protocol RadioShowFilter {
    var id: MusicItemID { get }
}
extension RadioShow: RadioShowFilter {}

/// A record label.
public struct RecordLabel: FilterableMusicItem, MusicCatalogSearchable, ResourceBackedItem, Identifiable, Equatable, Hashable, Codable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    public typealias FilterType = RecordLabelFilter
    static let resourceTypes = ["record-labels"]
    public let _resource: _MusicResource
    public init(_resource: _MusicResource) { self._resource = _resource }
    public var description: String { "RecordLabel(id: \"\(id)\", name: \"\(name)\")" }

    public var artwork: Artwork? { resource.artwork }
    public var name: String { resource.string("name") ?? "" }
    public var shortDescription: String? { resource.attributes["description"]?["short"]?.string }
    public var standardDescription: String? { resource.attributes["description"]?["standard"]?.string }
    public var url: URL? { resource.url("url") }
    public var latestReleases: MusicItemCollection<Album>? { resource.view("latest-releases") }
    public var topReleases: MusicItemCollection<Album>? { resource.view("top-releases") }
}

/// What `MusicCatalogResourceRequest<RecordLabel>` can match on.
public protocol RecordLabelFilter {
    var id: MusicItemID { get }
}
extension RecordLabel: RecordLabelFilter {}

