import Foundation

/// Searches the catalog of the account's storefront by term.
public struct MusicCatalogSearchRequest: Sendable, CustomStringConvertible {
    public let term: String
    public let types: [any MusicCatalogSearchable.Type]
    /// Items per type (default 25, at most 50).
    public var limit: Int?
    /// Items of each type to skip.
    public var offset: Int?
    /// Also answer the best matches across all types in `topResults`.
    public var includeTopResults: Bool = false

    public init(term: String, types: [any MusicCatalogSearchable.Type]) {
        self.term = term
        self.types = types
    }

    public var description: String {
        "MusicCatalogSearchRequest(term: \"\(term)\", types: \(types.map { "\($0)" }))"
    }

    /// Runs the search: on the Apple Music API when a developer token is configured (see
    /// `AppleMusicCatalog`), else in the embedded catalog.
    public func response() async throws -> MusicCatalogSearchResponse {
        let pageLimit = min(max(limit ?? 25, 1), 50)
        let pageOffset = max(offset ?? 0, 0)
        let keys = types.compactMap { ($0 as? any ResourceBackedItem.Type)?.catalogType }
        return try await catalogBackend().search(term: term, types: keys, limit: pageLimit, offset: pageOffset,
                                                 topResults: includeTopResults)
    }
}

/// What a catalog search found, per type.
public struct MusicCatalogSearchResponse: Sendable, Equatable, Hashable, Codable, CustomStringConvertible,
    CustomDebugStringConvertible {
    public private(set) var albums: MusicItemCollection<Album> = []
    public private(set) var artists: MusicItemCollection<Artist> = []
    public private(set) var curators: MusicItemCollection<Curator> = []
    public private(set) var musicVideos: MusicItemCollection<MusicVideo> = []
    public private(set) var playlists: MusicItemCollection<Playlist> = []
    public private(set) var radioShows: MusicItemCollection<RadioShow> = []
    public private(set) var recordLabels: MusicItemCollection<RecordLabel> = []
    public private(set) var songs: MusicItemCollection<Song> = []
    public private(set) var stations: MusicItemCollection<Station> = []
    public internal(set) var topResults: MusicItemCollection<TopResult> = []
    var source = NotCompared<MusicCatalogAnswerSource?>(value: nil)

    /// Where the answer came from: the Apple Music API, its offline cache (and whether stale),
    /// or the embedded catalog; nil for a response decoded from JSON. (Linux addition)
    public var answerSource: MusicCatalogAnswerSource? { source.value }

    /// One of the best matches, of any type.
    public enum TopResult: _MusicResourceUnion, MusicItem, Identifiable, Equatable, Hashable, Sendable, Codable, CustomStringConvertible,
        CustomDebugStringConvertible {
        public typealias ID = MusicItemID
        case album(Album)
        case artist(Artist)
        case curator(Curator)
        case musicVideo(MusicVideo)
        case playlist(Playlist)
        case radioShow(RadioShow)
        case recordLabel(RecordLabel)
        case song(Song)
        case station(Station)

        public init?(_resource: _MusicResource) {
            let resource = _resource.object
            switch resource.type {
            case "albums": self = .album(Album(resource: resource))
            case "artists": self = .artist(Artist(resource: resource))
            case "curators", "apple-curators": self = .curator(Curator(resource: resource))
            case "music-videos": self = .musicVideo(MusicVideo(resource: resource))
            case "playlists": self = .playlist(Playlist(resource: resource))
            case "radio-shows": self = .radioShow(RadioShow(resource: resource))
            case "record-labels": self = .recordLabel(RecordLabel(resource: resource))
            case "songs": self = .song(Song(resource: resource))
            case "stations": self = .station(Station(resource: resource))
            default: return nil
            }
        }

        public var _resource: _MusicResource {
            switch self {
            case .album(let item): item._resource
            case .artist(let item): item._resource
            case .curator(let item): item._resource
            case .musicVideo(let item): item._resource
            case .playlist(let item): item._resource
            case .radioShow(let item): item._resource
            case .recordLabel(let item): item._resource
            case .song(let item): item._resource
            case .station(let item): item._resource
            }
        }
    }

    init(results: [String: (items: [ResourceObject], next: String?)]) {
        func collection<Item: ResourceBackedItem>(_ key: String) -> MusicItemCollection<Item> {
            guard let result = results[key] else { return [] }
            return MusicItemCollection(items: result.items.map(Item.init(resource:)), next: result.next)
        }
        albums = collection("albums")
        artists = collection("artists")
        curators = collection("curators")
        musicVideos = collection("music-videos")
        playlists = collection("playlists")
        radioShows = collection("radio-shows")
        recordLabels = collection("record-labels")
        songs = collection("songs")
        stations = collection("stations")
    }

    private enum CodingKeys: String, CodingKey {
        case albums, artists, curators, playlists, songs, stations
        case musicVideos = "music-videos"
        case radioShows = "radio-shows"
        case recordLabels = "record-labels"
        case topResults = "top"
    }

    private enum EnvelopeKeys: String, CodingKey { case results }

    /// Decodes an Apple Music API search response: `{"results": {"songs": {"data": [...]}, ...}}`
    /// (the envelope may be left out).
    public init(from decoder: any Decoder) throws {
        let outer = try decoder.container(keyedBy: EnvelopeKeys.self)
        let container = outer.contains(.results)
            ? try outer.nestedContainer(keyedBy: CodingKeys.self, forKey: .results)
            : try decoder.container(keyedBy: CodingKeys.self)
        albums = try container.decodeIfPresent(MusicItemCollection<Album>.self, forKey: .albums) ?? []
        artists = try container.decodeIfPresent(MusicItemCollection<Artist>.self, forKey: .artists) ?? []
        curators = try container.decodeIfPresent(MusicItemCollection<Curator>.self, forKey: .curators) ?? []
        musicVideos = try container.decodeIfPresent(MusicItemCollection<MusicVideo>.self, forKey: .musicVideos) ?? []
        playlists = try container.decodeIfPresent(MusicItemCollection<Playlist>.self, forKey: .playlists) ?? []
        radioShows = try container.decodeIfPresent(MusicItemCollection<RadioShow>.self, forKey: .radioShows) ?? []
        recordLabels = try container.decodeIfPresent(MusicItemCollection<RecordLabel>.self, forKey: .recordLabels) ?? []
        songs = try container.decodeIfPresent(MusicItemCollection<Song>.self, forKey: .songs) ?? []
        stations = try container.decodeIfPresent(MusicItemCollection<Station>.self, forKey: .stations) ?? []
        topResults = try container.decodeIfPresent(MusicItemCollection<TopResult>.self, forKey: .topResults) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var outer = encoder.container(keyedBy: EnvelopeKeys.self)
        var container = outer.nestedContainer(keyedBy: CodingKeys.self, forKey: .results)
        if !albums.isEmpty { try container.encode(albums, forKey: .albums) }
        if !artists.isEmpty { try container.encode(artists, forKey: .artists) }
        if !curators.isEmpty { try container.encode(curators, forKey: .curators) }
        if !musicVideos.isEmpty { try container.encode(musicVideos, forKey: .musicVideos) }
        if !playlists.isEmpty { try container.encode(playlists, forKey: .playlists) }
        if !radioShows.isEmpty { try container.encode(radioShows, forKey: .radioShows) }
        if !recordLabels.isEmpty { try container.encode(recordLabels, forKey: .recordLabels) }
        if !songs.isEmpty { try container.encode(songs, forKey: .songs) }
        if !stations.isEmpty { try container.encode(stations, forKey: .stations) }
        if !topResults.isEmpty { try container.encode(topResults, forKey: .topResults) }
    }

    public var description: String {
        var parts: [String] = []
        if !songs.isEmpty { parts.append("songs: \(songs.count)") }
        if !albums.isEmpty { parts.append("albums: \(albums.count)") }
        if !artists.isEmpty { parts.append("artists: \(artists.count)") }
        if !playlists.isEmpty { parts.append("playlists: \(playlists.count)") }
        if !stations.isEmpty { parts.append("stations: \(stations.count)") }
        if !musicVideos.isEmpty { parts.append("musicVideos: \(musicVideos.count)") }
        if !topResults.isEmpty { parts.append("topResults: \(topResults.count)") }
        return "MusicCatalogSearchResponse(\(parts.joined(separator: ", ")))"
    }

    public var debugDescription: String { description }
}

/// The kind of a catalog chart.
public enum MusicCatalogChartKind: Equatable, Hashable, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case cityTop
    case dailyGlobalTop
    case mostPlayed

    var apiValue: String {
        switch self {
        case .cityTop: "city-top"
        case .dailyGlobalTop: "daily-global-top"
        case .mostPlayed: "most-played"
        }
    }

    public var description: String {
        switch self {
        case .cityTop: "cityTop"
        case .dailyGlobalTop: "dailyGlobalTop"
        case .mostPlayed: "mostPlayed"
        }
    }
}

/// One chart: a titled, ordered list of items.
public struct MusicCatalogChart<MusicItemType: MusicCatalogChartRequestable>: Identifiable, Sendable, CustomStringConvertible,
    CustomDebugStringConvertible {
    public typealias ID = String
    public let id: String
    public let items: MusicItemCollection<MusicItemType>
    public let kind: MusicCatalogChartKind
    public let title: String

    public var description: String { "MusicCatalogChart(title: \"\(title)\", kind: \(kind), items: \(items.count))" }
    public var debugDescription: String {
        "MusicCatalogChart<\(MusicItemType.self)>(id: \"\(id)\", title: \"\(title)\", kind: \(kind), items: \(items.debugDescription))"
    }
}

extension MusicCatalogChart: Equatable where MusicItemType: Equatable {}
extension MusicCatalogChart: Hashable where MusicItemType: Hashable {}
extension MusicCatalogChart: Decodable where MusicItemType: Decodable {}
extension MusicCatalogChart: Encodable where MusicItemType: Encodable {}

/// Fetches the catalog's charts.
public struct MusicCatalogChartsRequest: Sendable, Equatable, Hashable, CustomStringConvertible {
    public let genre: Genre?
    public let kinds: [MusicCatalogChartKind]
    public let types: [any MusicCatalogChartRequestable.Type]
    public var limit: Int?
    public var offset: Int?

    public init(genre: Genre? = nil, kinds: [MusicCatalogChartKind] = [.mostPlayed],
                types: [any MusicCatalogChartRequestable.Type]) {
        self.genre = genre
        self.kinds = kinds
        self.types = types
    }

    public var description: String { "MusicCatalogChartsRequest(kinds: \(kinds), types: \(types.map { "\($0)" }))" }

    public static func == (a: MusicCatalogChartsRequest, b: MusicCatalogChartsRequest) -> Bool {
        a.genre == b.genre && a.kinds == b.kinds && a.limit == b.limit && a.offset == b.offset
            && a.types.map(ObjectIdentifier.init) == b.types.map(ObjectIdentifier.init)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(genre)
        hasher.combine(kinds)
        hasher.combine(limit)
        hasher.combine(offset)
        for type in types { hasher.combine(ObjectIdentifier(type)) }
    }

    /// Fetches the charts: from the Apple Music API when a developer token is configured (see
    /// `AppleMusicCatalog`), else from the embedded catalog.
    public func response() async throws -> MusicCatalogChartsResponse {
        let start = max(offset ?? 0, 0)
        let count = min(max(limit ?? 20, 1), 200)
        let keys = types.compactMap { ($0 as? any ResourceBackedItem.Type)?.catalogType }
        return try await catalogBackend().charts(kinds: kinds, types: keys, genre: genre, limit: count, offset: start)
    }
}

/// What a charts request found.
public struct MusicCatalogChartsResponse: Sendable, Equatable, Hashable, Codable, CustomStringConvertible,
    CustomDebugStringConvertible {
    public internal(set) var albumCharts: [MusicCatalogChart<Album>] = []
    public internal(set) var musicVideoCharts: [MusicCatalogChart<MusicVideo>] = []
    public internal(set) var playlistCharts: [MusicCatalogChart<Playlist>] = []
    public internal(set) var songCharts: [MusicCatalogChart<Song>] = []
    var source = NotCompared<MusicCatalogAnswerSource?>(value: nil)

    /// Where the answer came from: the Apple Music API, its offline cache (and whether stale),
    /// or the embedded catalog; nil for a response decoded from JSON. (Linux addition)
    public var answerSource: MusicCatalogAnswerSource? { source.value }

    init() {}

    private enum EnvelopeKeys: String, CodingKey { case results }
    private enum CodingKeys: String, CodingKey {
        case albums, playlists, songs
        case musicVideos = "music-videos"
    }
    private enum ChartKeys: String, CodingKey { case chart, name, data, orderId, next }

    /// Decodes an Apple Music API charts response: `{"results": {"songs": [{"chart", "name", "data"}]}}`.
    public init(from decoder: any Decoder) throws {
        let outer = try decoder.container(keyedBy: EnvelopeKeys.self)
        let container = outer.contains(.results)
            ? try outer.nestedContainer(keyedBy: CodingKeys.self, forKey: .results)
            : try decoder.container(keyedBy: CodingKeys.self)
        func charts<Item: ResourceBackedItem & MusicCatalogChartRequestable>(_ key: CodingKeys) throws -> [MusicCatalogChart<Item>] {
            guard container.contains(key) else { return [] }
            var list = try container.nestedUnkeyedContainer(forKey: key)
            var result: [MusicCatalogChart<Item>] = []
            while !list.isAtEnd {
                let chart = try list.nestedContainer(keyedBy: ChartKeys.self)
                let chartName = try chart.decodeIfPresent(String.self, forKey: .chart) ?? "most-played"
                let kind = MusicCatalogChartKind.allCases.first { $0.apiValue == chartName } ?? .mostPlayed
                let items = try chart.decodeIfPresent([Item].self, forKey: .data) ?? []
                result.append(MusicCatalogChart(id: try chart.decodeIfPresent(String.self, forKey: .orderId) ?? chartName,
                                                items: MusicItemCollection(items: items, next: try chart.decodeIfPresent(String.self, forKey: .next)),
                                                kind: kind, title: try chart.decodeIfPresent(String.self, forKey: .name) ?? ""))
            }
            return result
        }
        albumCharts = try charts(.albums)
        musicVideoCharts = try charts(.musicVideos)
        playlistCharts = try charts(.playlists)
        songCharts = try charts(.songs)
    }

    /// Encodes the Apple Music API's shape, which `init(from:)` reads back.
    public func encode(to encoder: any Encoder) throws {
        var outer = encoder.container(keyedBy: EnvelopeKeys.self)
        var container = outer.nestedContainer(keyedBy: CodingKeys.self, forKey: .results)
        func encode<Item: Encodable>(_ charts: [MusicCatalogChart<Item>], _ key: CodingKeys) throws {
            guard !charts.isEmpty else { return }
            var list = container.nestedUnkeyedContainer(forKey: key)
            for chart in charts {
                var object = list.nestedContainer(keyedBy: ChartKeys.self)
                try object.encode(chart.kind.apiValue, forKey: .chart)
                try object.encode(chart.title, forKey: .name)
                try object.encode(chart.id, forKey: .orderId)
                try object.encode(Array(chart.items), forKey: .data)
                try object.encodeIfPresent(chart.items.nextHref, forKey: .next)
            }
        }
        try encode(albumCharts, .albums)
        try encode(musicVideoCharts, .musicVideos)
        try encode(playlistCharts, .playlists)
        try encode(songCharts, .songs)
    }

    public var description: String {
        "MusicCatalogChartsResponse(songCharts: \(songCharts.count), albumCharts: \(albumCharts.count), playlistCharts: \(playlistCharts.count), musicVideoCharts: \(musicVideoCharts.count))"
    }
    public var debugDescription: String { description }
}

extension MusicCatalogSearchResponse.TopResult {
    /// Top results from one list of matches per type: the first of each list, in the order the
    /// lists are given, then the second of each..., for `rounds` rounds.
    static func interleaving(_ lists: [[ResourceObject]], rounds: Int) -> [Self] {
        var top: [Self] = []
        for rank in 0..<max(rounds, 0) {
            for list in lists {
                if let resource = list.dropFirst(rank).first, let result = Self(resource: resource) { top.append(result) }
            }
        }
        return top
    }
}
