import Foundation

/// Recommendations made for the person from their listening history and the catalog, in the
/// shapes Apple returns (`MusicPersonalRecommendation` groups of albums, playlists and stations).
///
/// Made here, in order, when there is something to put in them:
/// - **Recently Played** — the albums, playlists and stations played from, newest first;
/// - **Heavy Rotation** — what was played from most in the last 30 days (at least twice);
/// - **More Like _artist_** — catalog albums by the most played artist of the last 90 days, then
///   albums of that artist's genre, not played yet;
/// - **_Genre_ for You** — catalog playlists and albums of the most played genre, not played yet;
/// - **New Releases** — the catalog's newest albums not played yet (also for someone who has
///   played nothing).
///
/// Each has a stable `id`, so `init(refreshing:)` makes the same ones again with what changed.
/// Needs an authorized app (`MusicLibrary.Error.permissionDenied` otherwise); the listening
/// history is only read when the account's "Use Listening History" is on.
public struct MusicPersonalRecommendationsRequest: Equatable, Hashable, Sendable {
    /// At most this many recommendations (default 10).
    public var limit: Int?
    /// Recommendations to skip.
    public var offset: Int?
    private var refreshing: [MusicItemID]?

    public init() {}

    /// Makes these recommendations again (the ones of their IDs that still have items).
    public init<S: Sequence>(refreshing recommendations: S) where S.Element == MusicPersonalRecommendation {
        refreshing = recommendations.map(\.id)
    }

    /// Items per recommendation.
    static let itemsPerRecommendation = 10
    /// How long a recommendation stands before it is worth asking again.
    static let refreshInterval: TimeInterval = 3_600

    public func response() async throws -> MusicPersonalRecommendationsResponse {
        let library = try MusicLibrary.authorizedService()
        let catalog = try await MusicCatalogService.current()
        let account = catalog.account
        let now = Date()
        let plays = account.usesListeningHistory
            ? try library.withStore { try $0.plays(since: now.addingTimeInterval(-90 * 86_400), limit: 5_000) } : []
        let made = try Recommender(plays: plays, catalog: catalog, account: account, now: now).recommendations()
        var chosen = made
        if let refreshing { chosen = refreshing.compactMap { id in made.first { $0.id == id } } }
        let page = chosen.dropFirst(max(offset ?? 0, 0)).prefix(max(limit ?? 10, 0))
        return MusicPersonalRecommendationsResponse(recommendations: MusicItemCollection(items: Array(page)))
    }
}

/// Builds the recommendations from plays and the catalog.
private struct Recommender {
    let plays: [(played: Date, entry: ResourceObject, container: ResourceObject?)]
    let catalog: MusicCatalogService
    let account: MusicAccountSettings
    let now: Date

    private var count: Int { MusicPersonalRecommendationsRequest.itemsPerRecommendation }

    func recommendations() throws -> [MusicPersonalRecommendation] {
        var result: [MusicPersonalRecommendation] = []
        let played = Set(plays.compactMap { $0.container.map(Self.key) })
        func add(_ id: String, _ title: String, reason: String?, _ resources: [ResourceObject]) {
            let items = resources.compactMap(MusicPersonalRecommendation.Item.init(resource:))
            guard !items.isEmpty else { return }
            result.append(MusicPersonalRecommendation(id: MusicItemID(id), title: title, reason: reason,
                                                      nextRefreshDate: now.addingTimeInterval(MusicPersonalRecommendationsRequest.refreshInterval),
                                                      items: MusicItemCollection(items: Array(items.prefix(count)))))
        }

        // Recently played containers, newest first, each once.
        var seen = Set<String>()
        let recent = plays.compactMap(\.container).filter { seen.insert(Self.key($0)).inserted }
        add("recently-played", "Recently Played", reason: nil, recent)

        // Heavy rotation: containers played from most in 30 days.
        let monthAgo = now.addingTimeInterval(-30 * 86_400)
        var rotation: [String: (resource: ResourceObject, plays: Int)] = [:]
        for play in plays where play.played >= monthAgo {
            guard let container = play.container else { continue }
            rotation[Self.key(container), default: (container, 0)].plays += 1
        }
        let heavy = rotation.values.filter { $0.plays >= 2 }
            .sorted { ($0.plays, $0.resource.string("name") ?? "") > ($1.plays, $1.resource.string("name") ?? "") }
        add("heavy-rotation", "Heavy Rotation", reason: "What you have played most this month", heavy.map(\.resource))

        let albums = try catalogItems("albums")
        let playlists = try catalogItems("playlists")
        let unplayed = { (resource: ResourceObject) in !played.contains(Self.key(resource)) }

        // More like the most played artist: their albums, then albums of their genre.
        if let artist = Self.mostCommon(plays.compactMap { $0.entry.string("artistName") }) {
            let genres = plays.filter { $0.entry.string("artistName") == artist }.flatMap { $0.entry.strings("genreNames") ?? [] }
            let genre = Self.mostCommon(genres.filter { $0 != "Music" })
            let byArtist = albums.filter { $0.string("artistName") == artist }
            let alike = albums.filter { album in
                album.string("artistName") != artist && genre.map { (album.strings("genreNames") ?? []).contains($0) } ?? false
            }
            add("more-like:\(artist)", "More Like \(artist)", reason: "Because you listened to \(artist)",
                (byArtist + alike).filter(unplayed))
        }

        // The most played genre.
        if let genre = Self.mostCommon(plays.flatMap { $0.entry.strings("genreNames") ?? [] }.filter { $0 != "Music" }) {
            let matching = (playlists + albums).filter { (($0.strings("genreNames") ?? []).contains(genre)) && unplayed($0) }
            add("genre:\(genre)", "\(genre) for You", reason: "Because you like \(genre)", matching)
        }

        // The newest albums.
        let newest = albums.filter(unplayed).sorted { ($0.string("releaseDate") ?? "") > ($1.string("releaseDate") ?? "") }
        add("new-releases", "New Releases", reason: nil, newest)
        return result
    }

    /// The catalog's items of `type` in the account's storefront that the account allows (the
    /// first 5,000: recommendations need candidates, not the whole catalog).
    private func catalogItems(_ type: String) throws -> [ResourceObject] {
        try catalog.allResources(type: type, account: account, limit: 5_000, offset: 0).items
            .filter { catalog.allows($0, account) }
            .map { MusicCatalogService.trimmed($0) }
    }

    /// A container the same whether it was played from the library or the catalog.
    private static func key(_ resource: ResourceObject) -> String {
        let type = resource.type.hasPrefix("library-") ? String(resource.type.dropFirst(8)) : resource.type
        return type + "/" + (resource.playParameters?.catalogID ?? resource.id)
    }

    /// The value seen most often (ties: the one seen first).
    private static func mostCommon(_ values: [String]) -> String? {
        var counts: [String: Int] = [:]
        for value in values where !value.isEmpty { counts[value, default: 0] += 1 }
        return values.first { counts[$0] == counts.values.max() }
    }
}

/// A group of albums, playlists and stations recommended to the person, with why.
public struct MusicPersonalRecommendation: MusicItem, Identifiable, Equatable, Hashable, Sendable, Codable,
    CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    public let id: MusicItemID
    public let title: String?
    /// Why these items ("Because you listened to …").
    public let reason: String?
    /// When the recommendation is worth asking for again.
    public let nextRefreshDate: Date?
    public var items: MusicItemCollection<Item> { storedItems }
    private let storedItems: MusicItemCollection<Item>

    init(id: MusicItemID, title: String?, reason: String?, nextRefreshDate: Date?, items: MusicItemCollection<Item>) {
        self.id = id
        self.title = title
        self.reason = reason
        self.nextRefreshDate = nextRefreshDate
        storedItems = items
    }

    public var albums: MusicItemCollection<Album> {
        MusicItemCollection(items: items.compactMap { if case .album(let album) = $0 { album } else { nil } })
    }
    public var playlists: MusicItemCollection<Playlist> {
        MusicItemCollection(items: items.compactMap { if case .playlist(let playlist) = $0 { playlist } else { nil } })
    }
    public var stations: MusicItemCollection<Station> {
        MusicItemCollection(items: items.compactMap { if case .station(let station) = $0 { station } else { nil } })
    }

    /// The types of the items, in the order they first appear.
    public var types: [any MusicPersonalRecommendationItem.Type] {
        var types: [any MusicPersonalRecommendationItem.Type] = []
        for item in items {
            let type: any MusicPersonalRecommendationItem.Type = switch item {
            case .album: Album.self
            case .playlist: Playlist.self
            case .station: Station.self
            }
            if !types.contains(where: { $0 == type }) { types.append(type) }
        }
        return types
    }

    public var description: String {
        "MusicPersonalRecommendation(id: \"\(id)\", title: \"\(title ?? "")\", items: \(items.count))"
    }
    public var debugDescription: String {
        "MusicPersonalRecommendation(id: \"\(id)\", title: \(title.map { "\"\($0)\"" } ?? "nil"), "
            + "reason: \(reason.map { "\"\($0)\"" } ?? "nil"), items: \(items.debugDescription))"
    }

    // The Apple Music API's personal-recommendation resource.
    private enum CodingKeys: String, CodingKey { case id, type, attributes, relationships }
    private enum AttributeKeys: String, CodingKey { case title, reason, nextUpdateDate, resourceTypes, kind }
    private enum DisplayKeys: String, CodingKey { case stringForDisplay }
    private enum RelationshipKeys: String, CodingKey { case contents }
    private enum ContentsKeys: String, CodingKey { case data, next }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let id = try container.decode(MusicItemID.self, forKey: .id)
        var title: String?
        var reason: String?
        var refresh: Date?
        if container.contains(.attributes) {
            let attributes = try container.nestedContainer(keyedBy: AttributeKeys.self, forKey: .attributes)
            func display(_ key: AttributeKeys) throws -> String? {
                guard attributes.contains(key) else { return nil }
                return try attributes.nestedContainer(keyedBy: DisplayKeys.self, forKey: key)
                    .decodeIfPresent(String.self, forKey: .stringForDisplay)
            }
            title = try display(.title)
            reason = try display(.reason)
            refresh = try attributes.decodeIfPresent(String.self, forKey: .nextUpdateDate).flatMap { text in
                try Date(text, strategy: .iso8601)
            }
        }
        var items: MusicItemCollection<Item> = []
        if container.contains(.relationships) {
            let relationships = try container.nestedContainer(keyedBy: RelationshipKeys.self, forKey: .relationships)
            if relationships.contains(.contents) {
                let contents = try relationships.nestedContainer(keyedBy: ContentsKeys.self, forKey: .contents)
                items = MusicItemCollection(items: try contents.decodeIfPresent([Item].self, forKey: .data) ?? [],
                                            next: try contents.decodeIfPresent(String.self, forKey: .next))
            }
        }
        self.init(id: id, title: title, reason: reason, nextRefreshDate: refresh, items: items)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode("personal-recommendation", forKey: .type)
        var attributes = container.nestedContainer(keyedBy: AttributeKeys.self, forKey: .attributes)
        if let title {
            var display = attributes.nestedContainer(keyedBy: DisplayKeys.self, forKey: .title)
            try display.encode(title, forKey: .stringForDisplay)
        }
        if let reason {
            var display = attributes.nestedContainer(keyedBy: DisplayKeys.self, forKey: .reason)
            try display.encode(reason, forKey: .stringForDisplay)
        }
        try attributes.encodeIfPresent(nextRefreshDate?.formatted(.iso8601), forKey: .nextUpdateDate)
        try attributes.encode(types.compactMap { ($0 as? any ResourceBackedItem.Type)?.catalogType }, forKey: .resourceTypes)
        var relationships = container.nestedContainer(keyedBy: RelationshipKeys.self, forKey: .relationships)
        var contents = relationships.nestedContainer(keyedBy: ContentsKeys.self, forKey: .contents)
        try contents.encode(Array(items), forKey: .data)
        try contents.encodeIfPresent(items.nextHref, forKey: .next)
    }

    /// One recommended item: an album, a playlist or a station.
    public enum Item: _MusicResourceUnion, MusicItem, Identifiable, Equatable, Hashable, Sendable, Codable, CustomStringConvertible,
        CustomDebugStringConvertible {
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

        /// The artist of an album, the curator of a playlist.
        public var subtitle: String? { resource.containerSubtitle }
    }
}

/// The recommendations a request made.
public struct MusicPersonalRecommendationsResponse: Equatable, Hashable, Sendable, Codable, CustomStringConvertible,
    CustomDebugStringConvertible {
    public let recommendations: MusicItemCollection<MusicPersonalRecommendation>

    init(recommendations: MusicItemCollection<MusicPersonalRecommendation>) {
        self.recommendations = recommendations
    }

    /// Decodes the Apple Music API's `{"data": [personal-recommendation, ...]}`.
    public init(from decoder: any Decoder) throws {
        recommendations = try MusicItemCollection<MusicPersonalRecommendation>(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws { try recommendations.encode(to: encoder) }

    public var description: String {
        "MusicPersonalRecommendationsResponse(recommendations: \(recommendations.map { $0.title ?? $0.id.rawValue }))"
    }
    public var debugDescription: String {
        "MusicPersonalRecommendationsResponse(recommendations: \(recommendations.map(\.debugDescription)))"
    }
}
