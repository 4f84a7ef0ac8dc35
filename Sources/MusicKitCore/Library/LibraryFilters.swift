import Foundation

// The library filter and sort protocols of Apple's MusicKit: the key paths that
// `MusicLibraryRequest` filters and sorts on. Each item type conforms to its own pair.

public protocol LibraryAlbumFilter {
    var artistName: String { get }
    var artists: MusicItemCollection<Artist>? { get }
    var genres: MusicItemCollection<Genre>? { get }
    var id: MusicItemID { get }
    var isCompilation: Bool? { get }
    var title: String { get }
}

public protocol LibraryAlbumSortProperties {
    var artistName: String { get }
    var lastPlayedDate: Date? { get }
    var libraryAddedDate: Date? { get }
    var releaseDate: Date? { get }
    var title: String { get }
    var trackCount: Int { get }
}

public protocol LibraryArtistFilter {
    var genres: MusicItemCollection<Genre>? { get }
    var id: MusicItemID { get }
    var name: String { get }
    var playlists: MusicItemCollection<Playlist>? { get }
}

public protocol LibraryArtistSortProperties {
    var albumCount: Int? { get }
    var libraryAddedDate: Date? { get }
    var name: String { get }
}

public protocol LibraryGenreFilter {
    var id: MusicItemID { get }
    var name: String { get }
}

public protocol LibraryGenreSortProperties {
    var libraryAddedDate: Date? { get }
    var name: String { get }
}

public protocol LibraryMusicVideoFilter {
    var albumTitle: String? { get }
    var albums: MusicItemCollection<Album>? { get }
    var artistName: String? { get }
    var artists: MusicItemCollection<Artist>? { get }
    var genres: MusicItemCollection<Genre>? { get }
    var id: MusicItemID { get }
    var title: String { get }
}

public protocol LibraryMusicVideoSortProperties {
    var albumTitle: String? { get }
    var artistName: String? { get }
    var duration: TimeInterval? { get }
    var lastPlayedDate: Date? { get }
    var libraryAddedDate: Date? { get }
    var playCount: Int? { get }
    var title: String { get }
    var trackNumber: Int? { get }
}

public protocol LibraryPlaylistEntryFilter {
    var id: MusicItemID { get }
}

public protocol LibraryPlaylistEntrySortProperties {
}

public protocol LibraryPlaylistFilter {
    var id: MusicItemID { get }
    var name: String { get }
}

public protocol LibraryPlaylistSortProperties {
    var lastPlayedDate: Date? { get }
    var libraryAddedDate: Date? { get }
    var name: String { get }
}

public protocol LibrarySongFilter {
    var albumTitle: String? { get }
    var albums: MusicItemCollection<Album>? { get }
    var artistName: String? { get }
    var artists: MusicItemCollection<Artist>? { get }
    var composerName: String? { get }
    var genres: MusicItemCollection<Genre>? { get }
    var id: MusicItemID { get }
    var title: String { get }
}

public protocol LibrarySongSortProperties {
    var albumTitle: String? { get }
    var artistName: String? { get }
    var composerName: String? { get }
    var discNumber: Int? { get }
    var duration: TimeInterval? { get }
    var lastPlayedDate: Date? { get }
    var libraryAddedDate: Date? { get }
    var playCount: Int? { get }
    var title: String { get }
    var trackNumber: Int? { get }
}

public protocol LibraryTrackFilter {
    var albumTitle: String? { get }
    var albums: MusicItemCollection<Album>? { get }
    var artistName: String? { get }
    var artists: MusicItemCollection<Artist>? { get }
    var genres: MusicItemCollection<Genre>? { get }
    var id: MusicItemID { get }
    var title: String { get }
}

public protocol LibraryTrackSortProperties {
    var albumTitle: String? { get }
    var artistName: String? { get }
    var discNumber: Int? { get }
    var duration: TimeInterval? { get }
    var lastPlayedDate: Date? { get }
    var libraryAddedDate: Date? { get }
    var playCount: Int? { get }
    var title: String { get }
    var trackNumber: Int? { get }
}

/// Values `MusicLibraryRequest.filter(matching:equalTo:)` can compare.
public protocol MusicLibraryRequestFilterValueEquatable {}
/// Values `MusicLibraryRequest.filter(matching:memberOf:)` can compare.
public protocol MusicLibraryRequestFilterValueMembershipComparable {}
extension Bool: MusicLibraryRequestFilterValueEquatable {}
extension Int: MusicLibraryRequestFilterValueEquatable {}
extension String: MusicLibraryRequestFilterValueEquatable {}
extension MusicItemID: MusicLibraryRequestFilterValueEquatable {}
extension Date: MusicLibraryRequestFilterValueEquatable {}
extension Int: MusicLibraryRequestFilterValueMembershipComparable {}
extension String: MusicLibraryRequestFilterValueMembershipComparable {}
extension MusicItemID: MusicLibraryRequestFilterValueMembershipComparable {}

extension Song {
    public typealias LibraryFilter = LibrarySongFilter
    public typealias LibrarySortProperties = LibrarySongSortProperties
}
extension Album {
    public typealias LibraryFilter = LibraryAlbumFilter
    public typealias LibrarySortProperties = LibraryAlbumSortProperties
}
extension Artist {
    public typealias LibraryFilter = LibraryArtistFilter
    public typealias LibrarySortProperties = LibraryArtistSortProperties
}
extension Genre {
    public typealias LibraryFilter = LibraryGenreFilter
    public typealias LibrarySortProperties = LibraryGenreSortProperties
}
extension MusicVideo {
    public typealias LibraryFilter = LibraryMusicVideoFilter
    public typealias LibrarySortProperties = LibraryMusicVideoSortProperties
}
extension Playlist {
    public typealias LibraryFilter = LibraryPlaylistFilter
    public typealias LibrarySortProperties = LibraryPlaylistSortProperties
}
extension Track {
    public typealias LibraryFilter = LibraryTrackFilter
    public typealias LibrarySortProperties = LibraryTrackSortProperties
}
