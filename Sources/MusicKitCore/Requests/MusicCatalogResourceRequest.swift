import Foundation

/// Fetches catalog items by identifier (or by another filter: ISRC, UPC), in the account's
/// storefront.
public struct MusicCatalogResourceRequest<MusicItemType: MusicItem & Decodable>: Sendable {
    /// Related properties to load with the items.
    public var properties: [PartialMusicAsyncProperty<MusicItemType>] = []
    /// At most this many items.
    public var limit: Int?
    /// Additional options to use for this request (Apple's since iOS/macOS 26.4).
    public var options: [MusicCatalogResourceRequestOption] = []

    typealias Filter = CatalogResourceFilter

    let filter: Filter

    /// Matches one value of a filter property (`\.id`, `\.isrc`, `\.upc`).
    public init<Value>(matching keyPath: KeyPath<MusicItemType.FilterType, Value>, equalTo value: Value)
    where MusicItemType: FilterableMusicItem {
        self.init(matching: keyPath, memberOf: [value])
    }

    /// Matches any of several values of a filter property.
    public init<Value>(matching keyPath: KeyPath<MusicItemType.FilterType, Value>, memberOf values: [Value])
    where MusicItemType: FilterableMusicItem {
        let strings = values.compactMap { value -> String? in
            if let id = value as? MusicItemID { return id.rawValue }
            if let text = value as? String { return text }
            if let optional = value as? String? { return optional }
            return nil
        }
        filter = Self.filter(for: keyPath, values: strings)
    }

    /// Every item of a top-level type (genres).
    public init() where MusicItemType: MusicCatalogTopLevelResourceRequesting {
        filter = .all
    }

    /// Which filter a key path names: the filter protocols' `isrc` and `upc`, else the ID.
    private static func filter(for keyPath: AnyKeyPath, values: [String]) -> Filter {
        if keyPath == \SongFilter.isrc || keyPath == \MusicVideoFilter.isrc { return .isrc(values) }
        if keyPath == \AlbumFilter.upc { return .upc(values) }
        return .ids(values)
    }

    /// Runs the request against the catalog: the Apple Music API when a developer token is
    /// configured (see `AppleMusicCatalog`), else the embedded catalog.
    public func response() async throws -> MusicCatalogResourceResponse<MusicItemType> {
        guard let resourceType = MusicItemType.self as? any ResourceBackedItem.Type else {
            throw MusicCatalogError.unsupportedRequest("resources of \(MusicItemType.self)")
        }
        let type = resourceType.catalogType
        let loads = properties.map { (key: $0.key, source: $0.source) }
        var (pairs, next, source) = try await catalogBackend().resources(
            type: type, filter: filter, findEquivalents: options.contains(.findEquivalents), limit: limit, properties: loads)
        if let limit { pairs = Array(pairs.prefix(limit)) }
        let keys = Set(loads.map(\.key))
        var items: [MusicItemType] = []
        var byRequestedID: [MusicItemID: MusicItemType] = [:]
        for (requested, resource) in pairs {
            guard let item = resourceType.init(resource: MusicCatalogService.trimmed(resource, keeping: keys)) as? MusicItemType else {
                continue
            }
            if !items.contains(where: { $0.id == item.id }) { items.append(item) }
            byRequestedID[MusicItemID(requested)] = item
        }
        return MusicCatalogResourceResponse(items: MusicItemCollection(items: items, next: next), byRequestedID: byRequestedID,
                                            source: NotCompared(value: source))
    }
}

extension MusicCatalogResourceRequest: CustomStringConvertible {
    public var description: String {
        "MusicCatalogResourceRequest<\(MusicItemType.self)>(\(filter)\(options.contains(.findEquivalents) ? ", findEquivalents" : ""))"
    }
}

/// An option to use when requesting a resource from the Apple Music catalog
/// (`MusicCatalogResourceRequest.options`; Apple's since iOS/macOS 26.4).
public struct MusicCatalogResourceRequestOption: CustomStringConvertible, Equatable, Hashable, Sendable {
    private let name: String

    /// Answer each requested item with its best available equivalent in the account's
    /// storefront where the account cannot have it as asked: another storefront's ID becomes
    /// the account storefront's, an explicit item the account does not allow its clean version.
    public static let findEquivalents = MusicCatalogResourceRequestOption(name: "findEquivalents")

    public var description: String { name }
}

/// What a catalog resource request found.
public struct MusicCatalogResourceResponse<MusicItemType: MusicItem>: Sendable, CustomStringConvertible,
    CustomDebugStringConvertible {
    /// The items found, each once, in the order requested.
    public let items: MusicItemCollection<MusicItemType>
    let byRequestedID: [MusicItemID: MusicItemType]
    let source: NotCompared<MusicCatalogAnswerSource?>

    /// Where the answer came from: the Apple Music API, its offline cache (and whether stale),
    /// or the embedded catalog; nil for a response decoded from JSON. (Linux addition)
    public var answerSource: MusicCatalogAnswerSource? { source.value }

    /// The item that answers the requested ID: itself, or its equivalent (another storefront's
    /// ID, a clean version) with `.findEquivalents`; nil when the catalog has nothing for it.
    /// (Linux addition)
    public func item(for requestedID: MusicItemID) -> MusicItemType? {
        byRequestedID[requestedID]
    }

    public var description: String { "MusicCatalogResourceResponse(items: \(items))" }
    public var debugDescription: String { description }
}

extension MusicCatalogResourceResponse: Equatable where MusicItemType: Equatable {
    public static func == (a: Self, b: Self) -> Bool { a.items == b.items && a.byRequestedID == b.byRequestedID }
}

extension MusicCatalogResourceResponse: Hashable where MusicItemType: Hashable {
    public func hash(into hasher: inout Hasher) { hasher.combine(items) }
}

extension MusicCatalogResourceResponse: Codable where MusicItemType: Codable {
    private enum CodingKeys: String, CodingKey { case data }

    public init(from decoder: any Decoder) throws {
        let items = try MusicItemCollection<MusicItemType>(from: decoder)
        self.items = items
        byRequestedID = Dictionary(items.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        source = NotCompared(value: nil)
    }

    public func encode(to encoder: any Encoder) throws { try items.encode(to: encoder) }
}
