import Foundation

/// Item types `MusicLibraryRequest` can fetch.
public protocol MusicLibraryRequestable: MusicItem {
    associatedtype LibraryFilter
    associatedtype LibrarySortProperties
}

/// How a library item type maps the filter and sort key paths onto its library resources.
protocol LibraryRequestBacked: ResourceBackedItem, MusicLibraryRequestable {
    /// "songs", "albums", ...
    static var libraryType: String { get }
    /// Filter key paths to attribute names ("id" is the resource's ID).
    static var filterKeys: [AnyKeyPath: String] { get }
    static var sortKeys: [AnyKeyPath: String] { get }
}

extension Song: LibraryRequestBacked {
    static let libraryType = "songs"
    static var filterKeys: [AnyKeyPath: String] {
        [\LibrarySongFilter.id: "id", \LibrarySongFilter.title: "name", \LibrarySongFilter.artistName: "artistName",
         \LibrarySongFilter.albumTitle: "albumName", \LibrarySongFilter.composerName: "composerName",
         \LibrarySongFilter.artists: "artistName", \LibrarySongFilter.albums: "albumName", \LibrarySongFilter.genres: "genreNames"]
    }
    static var sortKeys: [AnyKeyPath: String] {
        [\LibrarySongSortProperties.title: "name", \LibrarySongSortProperties.artistName: "artistName",
         \LibrarySongSortProperties.albumTitle: "albumName", \LibrarySongSortProperties.composerName: "composerName",
         \LibrarySongSortProperties.discNumber: "discNumber", \LibrarySongSortProperties.duration: "durationInMillis",
         \LibrarySongSortProperties.lastPlayedDate: "lastPlayedDate", \LibrarySongSortProperties.libraryAddedDate: "dateAdded",
         \LibrarySongSortProperties.playCount: "playCount", \LibrarySongSortProperties.trackNumber: "trackNumber"]
    }
}

extension Album: LibraryRequestBacked {
    static let libraryType = "albums"
    static var filterKeys: [AnyKeyPath: String] {
        [\LibraryAlbumFilter.id: "id", \LibraryAlbumFilter.title: "name", \LibraryAlbumFilter.artistName: "artistName",
         \LibraryAlbumFilter.isCompilation: "isCompilation", \LibraryAlbumFilter.artists: "artistName",
         \LibraryAlbumFilter.genres: "genreNames"]
    }
    static var sortKeys: [AnyKeyPath: String] {
        [\LibraryAlbumSortProperties.title: "name", \LibraryAlbumSortProperties.artistName: "artistName",
         \LibraryAlbumSortProperties.lastPlayedDate: "lastPlayedDate", \LibraryAlbumSortProperties.libraryAddedDate: "dateAdded",
         \LibraryAlbumSortProperties.releaseDate: "releaseDate", \LibraryAlbumSortProperties.trackCount: "trackCount"]
    }
}

extension Artist: LibraryRequestBacked {
    static let libraryType = "artists"
    static var filterKeys: [AnyKeyPath: String] {
        [\LibraryArtistFilter.id: "id", \LibraryArtistFilter.name: "name", \LibraryArtistFilter.genres: "genreNames"]
    }
    static var sortKeys: [AnyKeyPath: String] {
        [\LibraryArtistSortProperties.name: "name", \LibraryArtistSortProperties.albumCount: "albumCount",
         \LibraryArtistSortProperties.libraryAddedDate: "dateAdded"]
    }
}

extension Genre: LibraryRequestBacked {
    static let libraryType = "genres"
    static var filterKeys: [AnyKeyPath: String] { [\LibraryGenreFilter.id: "id", \LibraryGenreFilter.name: "name"] }
    static var sortKeys: [AnyKeyPath: String] {
        [\LibraryGenreSortProperties.name: "name", \LibraryGenreSortProperties.libraryAddedDate: "dateAdded"]
    }
}

extension MusicVideo: LibraryRequestBacked {
    static let libraryType = "music-videos"
    static var filterKeys: [AnyKeyPath: String] {
        [\LibraryMusicVideoFilter.id: "id", \LibraryMusicVideoFilter.title: "name", \LibraryMusicVideoFilter.artistName: "artistName",
         \LibraryMusicVideoFilter.albumTitle: "albumName", \LibraryMusicVideoFilter.artists: "artistName",
         \LibraryMusicVideoFilter.albums: "albumName", \LibraryMusicVideoFilter.genres: "genreNames"]
    }
    static var sortKeys: [AnyKeyPath: String] {
        [\LibraryMusicVideoSortProperties.title: "name", \LibraryMusicVideoSortProperties.artistName: "artistName",
         \LibraryMusicVideoSortProperties.albumTitle: "albumName", \LibraryMusicVideoSortProperties.duration: "durationInMillis",
         \LibraryMusicVideoSortProperties.lastPlayedDate: "lastPlayedDate", \LibraryMusicVideoSortProperties.libraryAddedDate: "dateAdded",
         \LibraryMusicVideoSortProperties.playCount: "playCount", \LibraryMusicVideoSortProperties.trackNumber: "trackNumber"]
    }
}

/// Tracks: the library's songs and music videos.
extension Track: LibraryRequestBacked {
    static let libraryType = "tracks"
    static var filterKeys: [AnyKeyPath: String] {
        [\LibraryTrackFilter.id: "id", \LibraryTrackFilter.title: "name", \LibraryTrackFilter.artistName: "artistName",
         \LibraryTrackFilter.albumTitle: "albumName", \LibraryTrackFilter.artists: "artistName",
         \LibraryTrackFilter.albums: "albumName", \LibraryTrackFilter.genres: "genreNames"]
    }
    static var sortKeys: [AnyKeyPath: String] {
        [\LibraryTrackSortProperties.title: "name", \LibraryTrackSortProperties.artistName: "artistName",
         \LibraryTrackSortProperties.albumTitle: "albumName", \LibraryTrackSortProperties.discNumber: "discNumber",
         \LibraryTrackSortProperties.duration: "durationInMillis", \LibraryTrackSortProperties.lastPlayedDate: "lastPlayedDate",
         \LibraryTrackSortProperties.libraryAddedDate: "dateAdded", \LibraryTrackSortProperties.playCount: "playCount",
         \LibraryTrackSortProperties.trackNumber: "trackNumber"]
    }
}

extension Playlist: LibraryRequestBacked {
    static let libraryType = "playlists"
    static var filterKeys: [AnyKeyPath: String] { [\LibraryPlaylistFilter.id: "id", \LibraryPlaylistFilter.name: "name"] }
    static var sortKeys: [AnyKeyPath: String] {
        [\LibraryPlaylistSortProperties.name: "name", \LibraryPlaylistSortProperties.lastPlayedDate: "lastPlayedDate",
         \LibraryPlaylistSortProperties.libraryAddedDate: "dateAdded"]
    }
}

/// Fetches items from the person's library, filtered and sorted. Needs authorization.
public struct MusicLibraryRequest<MusicItemType: MusicLibraryRequestable>: Sendable {
    public var limit: Int = 25
    public var offset: Int = 0
    /// Everything in this library is on this machine, so this changes nothing.
    public var includeOnlyDownloadedContent: Bool = false

    enum Condition: Sendable {
        case contains(key: String, text: String)
        case equals(key: String, values: [String])
        case text(String)
        case unsupported(String)
    }

    private var conditions: [Condition] = []
    private var sorts: [(key: String, ascending: Bool)] = []

    public init() {}

    private static func key(_ keyPath: AnyKeyPath) -> String? {
        if MusicItemType.self == Playlist.Entry.self { return keyPath == \LibraryPlaylistEntryFilter.id ? "id" : nil }
        return (MusicItemType.self as? any LibraryRequestBacked.Type)?.filterKeys[keyPath]
    }

    private static func text(of value: Any) -> String {
        switch value {
        case let id as MusicItemID: id.rawValue
        case let text as String: text
        case let flag as Bool: flag ? "true" : "false"
        case let number as Int: String(number)
        default: "\(value)"
        }
    }

    /// Items whose property contains `text` (case and accents ignored).
    public mutating func filter(matching keyPath: KeyPath<MusicItemType.LibraryFilter, String>, contains text: String) {
        conditions.append(Self.key(keyPath).map { .contains(key: $0, text: text) } ?? .unsupported("\(keyPath)"))
    }

    public mutating func filter(matching keyPath: KeyPath<MusicItemType.LibraryFilter, String?>, contains text: String) {
        conditions.append(Self.key(keyPath).map { .contains(key: $0, text: text) } ?? .unsupported("\(keyPath)"))
    }

    /// Items related to `relatedItem` (by its name: an artist, an album, a genre).
    public mutating func filter<RelatedMusicItemType>(
        matching keyPath: KeyPath<MusicItemType.LibraryFilter, MusicItemCollection<RelatedMusicItemType>?>,
        contains relatedItem: RelatedMusicItemType
    ) where RelatedMusicItemType: MusicItem {
        let name = (relatedItem as? any ResourceBackedItem)?.resource.string("name") ?? ""
        conditions.append(Self.key(keyPath).map { .equals(key: $0, values: [name]) } ?? .unsupported("\(keyPath)"))
    }

    public mutating func filter<Value: MusicLibraryRequestFilterValueEquatable>(
        matching keyPath: KeyPath<MusicItemType.LibraryFilter, Value>, equalTo value: Value) {
        conditions.append(Self.key(keyPath).map { .equals(key: $0, values: [Self.text(of: value)]) } ?? .unsupported("\(keyPath)"))
    }

    public mutating func filter<Value: MusicLibraryRequestFilterValueEquatable>(
        matching keyPath: KeyPath<MusicItemType.LibraryFilter, Value?>, equalTo value: Value?) {
        conditions.append(Self.key(keyPath).map { .equals(key: $0, values: value.map { [Self.text(of: $0)] } ?? []) }
                          ?? .unsupported("\(keyPath)"))
    }

    public mutating func filter<Value: MusicLibraryRequestFilterValueMembershipComparable>(
        matching keyPath: KeyPath<MusicItemType.LibraryFilter, Value>, memberOf values: [Value]) {
        conditions.append(Self.key(keyPath).map { .equals(key: $0, values: values.map(Self.text(of:))) } ?? .unsupported("\(keyPath)"))
    }

    public mutating func filter<Value: MusicLibraryRequestFilterValueMembershipComparable>(
        matching keyPath: KeyPath<MusicItemType.LibraryFilter, Value?>, memberOf values: [Value?]) {
        conditions.append(Self.key(keyPath).map { .equals(key: $0, values: values.compactMap { $0.map(Self.text(of:)) }) }
                          ?? .unsupported("\(keyPath)"))
    }

    /// Items whose name, artist or album contains `text`.
    public mutating func filter(text: String) {
        conditions.append(.text(text))
    }

    /// Sorts by a property; earlier calls sort first.
    public mutating func sort<Value>(by keyPath: KeyPath<MusicItemType.LibrarySortProperties, Value>, ascending: Bool) {
        if let key = (MusicItemType.self as? any LibraryRequestBacked.Type)?.sortKeys[keyPath] {
            sorts.append((key, ascending))
        }
    }

    /// Runs the request. Throws `MusicLibrary.Error.permissionDenied` unless the app is authorized.
    public func response() async throws -> MusicLibraryResponse<MusicItemType> {
        let service = try MusicLibrary.authorizedService()
        if MusicItemType.self == Playlist.Entry.self {
            let entries = try playlistEntries(in: service).dropFirst(max(offset, 0)).prefix(max(limit, 0))
            return MusicLibraryResponse(items: MusicItemCollection(items: entries.compactMap { $0 as? MusicItemType }))
        }
        guard let type = MusicItemType.self as? any LibraryRequestBacked.Type else {
            return MusicLibraryResponse(items: MusicItemCollection(items: []))
        }
        let resources = try matchingResources(in: service)
        let page = resources.dropFirst(max(offset, 0)).prefix(max(limit, 0))
        let items = page.compactMap { type.init(resource: $0) as? MusicItemType }
        return MusicLibraryResponse(items: MusicItemCollection(items: items))
    }

    /// The entries of the library's playlists the filters keep (by ID: the song or video an
    /// entry holds), playlist by playlist, each in its playlist's order (Apple's
    /// `MusicLibraryRequest<Playlist.Entry>`; entries have no sort properties).
    private func playlistEntries(in service: MusicLibraryService) throws -> [Playlist.Entry] {
        let folded = conditions.map(Self.folded)
        return try service.items("playlists").flatMap { Playlist(resource: $0).entries ?? [] }.filter { entry in
            folded.allSatisfy { matches(MusicLibraryService.IndexedResource(entry.resource), $0) }
        }
    }

    /// Every library resource the filters keep, in the sorts' order (no paging).
    func matchingResources(in service: MusicLibraryService) throws -> [ResourceObject] {
        guard let type = MusicItemType.self as? any LibraryRequestBacked.Type else { return [] }
        let folded = conditions.map(Self.folded)
        var resources = try service.indexedItems(type.libraryType)
            .filter { entry in folded.allSatisfy { matches(entry, $0) } }
            .map(\.resource)
        if !sorts.isEmpty {
            resources.sort { left, right in
                for (key, ascending) in sorts {
                    let order = Self.compare(left.attributes[key], right.attributes[key])
                    if order != .orderedSame { return ascending ? order == .orderedAscending : order == .orderedDescending }
                }
                return false
            }
        }
        return resources
    }

    /// The condition with its texts folded like the index.
    private static func folded(_ condition: Condition) -> Condition {
        switch condition {
        case .contains(let key, let text): .contains(key: key, text: MusicLibraryService.IndexedResource.fold(text))
        case .equals(let key, let values): .equals(key: key, values: values.map(MusicLibraryService.IndexedResource.fold))
        case .text(let text): .text(MusicLibraryService.IndexedResource.fold(text))
        case .unsupported: condition
        }
    }

    private func matches(_ entry: MusicLibraryService.IndexedResource, _ condition: Condition) -> Bool {
        let resource = entry.resource
        func values(_ key: String) -> [String] {
            if key == "id" { return [resource.id] }
            if let folded = entry.folded[key] { return [folded] }
            switch resource.attributes[key] {
            case .string(let text)?: return [MusicLibraryService.IndexedResource.fold(text)]
            case .array(let array)?: return array.compactMap(\.string).map(MusicLibraryService.IndexedResource.fold)
            case .bool(let flag)?: return [flag ? "true" : "false"]
            case .number(let number)?: return [String(Int(number))]
            default: return []
            }
        }
        switch condition {
        case .contains(let key, let text):
            return values(key).contains { MusicLibraryService.IndexedResource.contains($0, text) }
        case .equals(let key, let wanted):
            return values(key).contains { wanted.contains($0) }
        case .text(let text):
            return ["name", "artistName", "albumName"].contains { key in
                entry.folded[key].map { MusicLibraryService.IndexedResource.contains($0, text) } ?? false
            }
        case .unsupported:
            return false
        }
    }

    private static func compare(_ left: JSONValue?, _ right: JSONValue?) -> ComparisonResult {
        switch (left, right) {
        case (.string(let a)?, .string(let b)?): return a.localizedStandardCompare(b)
        case (.number(let a)?, .number(let b)?): return a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
        case (nil, nil): return .orderedSame
        case (nil, _): return .orderedDescending  // missing values last
        case (_, nil): return .orderedAscending
        default: return .orderedSame
        }
    }
}

/// What a library request found.
public struct MusicLibraryResponse<MusicItemType: MusicItem>: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public let items: MusicItemCollection<MusicItemType>
    public var description: String { "MusicLibraryResponse(items: \(items.count))" }
    public var debugDescription: String { "MusicLibraryResponse<\(MusicItemType.self)>(items: \(items.debugDescription))" }
}

extension MusicLibraryResponse: Equatable where MusicItemType: Equatable {}
extension MusicLibraryResponse: Hashable where MusicItemType: Hashable {}
