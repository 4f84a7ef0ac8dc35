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

    enum Filter: Sendable, Equatable {
        case ids([String])
        case isrc([String])
        case upc([String])
        case all

        /// The Apple Music API's name of a value filter (`filter[isrc]`).
        var apiName: String {
            switch self {
            case .isrc: "isrc"
            case .upc: "upc"
            case .ids: "id"
            case .all: ""
            }
        }
    }

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
        var (pairs, next, source) = if let remote = try AppleMusicCatalog.current() {
            try await answer(from: remote, type: type, loads: loads)
        } else {
            try await answer(from: try await MusicCatalogService.current(), type: type, loads: loads)
        }
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

    private typealias Answer = (pairs: [(requested: String, resource: ResourceObject)], next: String?, source: MusicCatalogAnswerSource)

    private func answer(from service: MusicCatalogService, type: String,
                        loads: [(key: String, source: MusicPropertyKind)]) async throws -> Answer {
        let account = service.account
        var pairs: [(requested: String, resource: ResourceObject)]
        var next: String?
        switch filter {
        case .ids(let ids):
            pairs = try service.resources(type: type, ids: ids, findEquivalents: options.contains(.findEquivalents), account: account)
        case .isrc(let values):
            pairs = try service.resources(type: type, column: "isrc", values: values, account: account).map { ($0.id, $0) }
        case .upc(let values):
            pairs = try service.resources(type: type, column: "upc", values: values, account: account).map { ($0.id, $0) }
        case .all:
            let pageLimit = limit ?? 25
            let (items, total) = try service.allResources(type: type, account: account, limit: pageLimit, offset: 0)
            pairs = items.map { ($0.id, $0) }
            if items.count < total { next = "/v1/catalog/\(account.storefront)/\(type)?offset=\(items.count)&limit=\(pageLimit)" }
        }
        if !loads.isEmpty {
            pairs = try pairs.map { ($0.requested, try service.load(loads, for: MusicCatalogService.trimmed($0.resource), preferredSource: .catalog)) }
        }
        return (pairs, next, .embeddedCatalog)
    }

    private func answer(from remote: AppleMusicCatalog, type: String,
                        loads: [(key: String, source: MusicPropertyKind)]) async throws -> Answer {
        switch filter {
        case .ids(let ids):
            let (pairs, source) = try await remote.resources(type: type, ids: ids, findEquivalents: options.contains(.findEquivalents),
                                                             properties: loads)
            return (pairs, nil, source)
        case .isrc(let values), .upc(let values):
            let (resources, source) = try await remote.resources(type: type, filter: filter.apiName, values: values, properties: loads)
            return (resources.map { ($0.id, $0) }, nil, source)
        case .all:
            let (items, next, source) = try await remote.all(type: type, limit: limit ?? 25)
            return (items.map { ($0.id, $0) }, next, source)
        }
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
