import Foundation

/// An opaque identifier for a music item, as in Apple's MusicKit.
@frozen
public struct MusicItemID: Equatable, Hashable, Sendable, RawRepresentable, Codable, ExpressibleByStringLiteral,
    CustomStringConvertible {
    public typealias RawValue = String
    public typealias StringLiteralType = String
    public typealias ExtendedGraphemeClusterLiteralType = String
    public typealias UnicodeScalarLiteralType = String

    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            rawValue = text
        } else {
            // Some documents carry numeric identifiers.
            rawValue = String(try container.decode(Int64.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// A music item: the building block of MusicKit requests and players.
public protocol MusicItem: Sendable {
    var id: MusicItemID { get }
}

/// An item whose related properties can be loaded with `with(_:)`.
public protocol MusicPropertyContainer {}

/// An item that catalog resource requests can filter.
public protocol FilterableMusicItem: MusicItem {
    associatedtype FilterType
}

/// An item a music player can play.
public protocol PlayableMusicItem: MusicItem {
    var playParameters: PlayParameters? { get }
}

/// Items catalog search can return.
public protocol MusicCatalogSearchable: MusicItem {}
/// Items charts can hold.
public protocol MusicCatalogChartRequestable: MusicItem {}
/// Items that can be requested without a filter (`MusicCatalogResourceRequest<Genre>()`).
public protocol MusicCatalogTopLevelResourceRequesting: MusicItem {}
/// Items the person's library can hold.
public protocol MusicLibraryAddable: MusicItem {}
/// Items a library playlist can hold.
public protocol MusicPlaylistAddable: MusicItem {}
/// Items recently-played requests return.
public protocol MusicRecentlyPlayedRequestable: MusicItem {}
/// Items personal recommendations hold.
public protocol MusicPersonalRecommendationItem: MusicItem {}
/// Items library search can return.
public protocol MusicLibrarySearchable: MusicItem {}

/// The storage every item of this framework is built on: one Apple Music API resource object.
/// Properties read its attributes; relationships and views hold related resources.
protocol ResourceBackedItem: MusicItem, Codable, Hashable, MusicPropertyContainer, PropertyLoadable {
    var resource: ResourceObject { get }
    init(resource: ResourceObject)
    /// Resource types this item decodes from, catalog type first ("songs", "library-songs").
    static var resourceTypes: [String] { get }
}

extension ResourceBackedItem {
    static var catalogType: String { resourceTypes[0] }

    /// Decodes an Apple Music API resource object (or a library one).
    static func decodeResource(from decoder: any Decoder) throws -> ResourceObject {
        let resource = try ResourceObject(from: decoder)
        guard resourceTypes.contains(resource.type) || resource.type.isEmpty else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                debugDescription: "expected a resource of type \(resourceTypes.joined(separator: " or ")), found \"\(resource.type)\""))
        }
        return resource
    }
}

/// An Apple Music API resource object: `id`, `type`, `href`, `attributes`, `relationships`,
/// `views` and `meta`, kept whole so that nothing is lost between a document and an item.
struct ResourceObject: Codable, Hashable, Sendable {
    var id: String
    var type: String
    var href: String?
    var attributes: [String: JSONValue]
    var relationships: [String: Relationship]
    var views: [String: Relationship]
    var meta: JSONValue?

    /// A relationship or view: related resources (maybe identifiers only) and paging.
    struct Relationship: Codable, Hashable, Sendable {
        var href: String?
        var next: String?
        var attributes: [String: JSONValue]?
        var data: [ResourceObject]
        var meta: JSONValue?

        var jsonValue: JSONValue {
            var object: [String: JSONValue] = ["data": .array(data.map(\.jsonValue))]
            object["href"] = href.map(JSONValue.string)
            object["next"] = next.map(JSONValue.string)
            object["attributes"] = attributes.map(JSONValue.object)
            object["meta"] = meta
            return .object(object)
        }

        init(href: String? = nil, next: String? = nil, attributes: [String: JSONValue]? = nil,
             data: [ResourceObject], meta: JSONValue? = nil) {
            self.href = href
            self.next = next
            self.attributes = attributes
            self.data = data
            self.meta = meta
        }

        enum CodingKeys: String, CodingKey { case href, next, attributes, data, meta }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            href = try container.decodeIfPresent(String.self, forKey: .href)
            next = try container.decodeIfPresent(String.self, forKey: .next)
            attributes = try container.decodeIfPresent([String: JSONValue].self, forKey: .attributes)
            data = try container.decodeIfPresent([ResourceObject].self, forKey: .data) ?? []
            meta = try container.decodeIfPresent(JSONValue.self, forKey: .meta)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(href, forKey: .href)
            try container.encodeIfPresent(next, forKey: .next)
            try container.encodeIfPresent(attributes, forKey: .attributes)
            try container.encode(data, forKey: .data)
            try container.encodeIfPresent(meta, forKey: .meta)
        }
    }

    init(id: String, type: String, href: String? = nil, attributes: [String: JSONValue] = [:],
         relationships: [String: Relationship] = [:], views: [String: Relationship] = [:], meta: JSONValue? = nil) {
        self.id = id
        self.type = type
        self.href = href
        self.attributes = attributes
        self.relationships = relationships
        self.views = views
        self.meta = meta
    }

    enum CodingKeys: String, CodingKey { case id, type, href, attributes, relationships, views, meta }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(MusicItemID.self, forKey: .id)?.rawValue ?? ""
        type = try container.decodeIfPresent(String.self, forKey: .type) ?? ""
        href = try container.decodeIfPresent(String.self, forKey: .href)
        attributes = try container.decodeIfPresent([String: JSONValue].self, forKey: .attributes) ?? [:]
        relationships = try container.decodeIfPresent([String: Relationship].self, forKey: .relationships) ?? [:]
        views = try container.decodeIfPresent([String: Relationship].self, forKey: .views) ?? [:]
        meta = try container.decodeIfPresent(JSONValue.self, forKey: .meta)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(type, forKey: .type)
        try container.encodeIfPresent(href, forKey: .href)
        if !attributes.isEmpty { try container.encode(attributes, forKey: .attributes) }
        if !relationships.isEmpty { try container.encode(relationships, forKey: .relationships) }
        if !views.isEmpty { try container.encode(views, forKey: .views) }
        try container.encodeIfPresent(meta, forKey: .meta)
    }

    /// The resource as a JSON value (Apple Music API shape).
    var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["id": .string(id), "type": .string(type)]
        object["href"] = href.map(JSONValue.string)
        if !attributes.isEmpty { object["attributes"] = .object(attributes) }
        if !relationships.isEmpty { object["relationships"] = .object(relationships.mapValues(\.jsonValue)) }
        if !views.isEmpty { object["views"] = .object(views.mapValues(\.jsonValue)) }
        object["meta"] = meta
        return .object(object)
    }

    /// Only an identifier: no attributes (a reference inside a relationship).
    var isIdentifierOnly: Bool { attributes.isEmpty }

    // MARK: Attribute readers

    func string(_ key: String) -> String? { attributes[key]?.string }
    func int(_ key: String) -> Int? { attributes[key]?.int }
    func bool(_ key: String) -> Bool? { attributes[key]?.bool }
    func strings(_ key: String) -> [String]? { attributes[key]?.array?.compactMap(\.string) }
    func url(_ key: String) -> URL? { string(key).flatMap { URL(string: $0) } }
    func date(_ key: String) -> Date? { string(key).flatMap(ResourceObject.parseDate) }

    /// Milliseconds attribute as seconds.
    func duration(_ key: String = "durationInMillis") -> TimeInterval? {
        attributes[key]?.number.map { $0 / 1_000 }
    }

    var artwork: Artwork? { attributes["artwork"].flatMap(Artwork.init(json:)) }
    var editorialNotes: EditorialNotes? { attributes["editorialNotes"].flatMap(EditorialNotes.init(json:)) }
    var playParameters: PlayParameters? { attributes["playParams"].flatMap(PlayParameters.init(json:)) }
    var previewAssets: [PreviewAsset]? { attributes["previews"]?.array?.compactMap(PreviewAsset.init(json:)) }
    var contentRating: ContentRating? { string("contentRating").flatMap(ContentRating.init(rawValue:)) }
    var audioVariants: [AudioVariant]? { strings("audioVariants")?.compactMap(AudioVariant.init(apiValue:)) }

    /// A relationship's related items, nil when the relationship was not loaded.
    func related<Item: ResourceBackedItem>(_ key: String, as type: Item.Type = Item.self) -> MusicItemCollection<Item>? {
        guard let relationship = relationships[key] else { return nil }
        return MusicItemCollection(relationship: relationship)
    }

    /// A view's (association's) items, nil when it was not loaded.
    func view<Item: ResourceBackedItem>(_ key: String, as type: Item.Type = Item.self) -> MusicItemCollection<Item>? {
        guard let view = views[key] else { return nil }
        return MusicItemCollection(relationship: view)
    }

    /// "2014-07-28", "2012", "2019-05-01T12:00:00Z".
    static func parseDate(_ text: String) -> Date? {
        let parts = text.prefix(10).split(separator: "-").compactMap { Int($0) }
        guard let year = parts.first else { return nil }
        var components = DateComponents()
        components.calendar = Calendar(identifier: .gregorian)
        components.timeZone = TimeZone(identifier: "UTC")
        components.year = year
        components.month = parts.count > 1 ? parts[1] : 1
        components.day = parts.count > 2 ? parts[2] : 1
        if text.count > 10, let time = ISO8601DateFormatter().date(from: text) { return time }
        return components.date
    }
}
