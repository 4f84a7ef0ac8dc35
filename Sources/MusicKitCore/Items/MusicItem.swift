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
// MARK: - What the item types share (not API)
//
// The item types are views of one Apple Music API resource each. What they have in common is
// written once, in extensions of the underscored protocols below: public because the members
// they give are Apple's public API, underscored (the standard library's pattern) because they
// are not API themselves; the symbol graph and documentation leave them out.

/// Not API: an Apple Music API resource object, opaque outside this module.
public struct _MusicResource: Hashable, Sendable {
    let object: ResourceObject
    init(_ object: ResourceObject) { self.object = object }
}

/// Not API: a value read from an Apple Music API resource.
public protocol _MusicResourceReading {
    var _resource: _MusicResource { get }
}

/// Not API: an item type that is one resource: identified by its ID, decoded from it and
/// encoded to it whole, equal and hashed as it, debug-described as described.
public protocol _MusicResourceItem: _MusicResourceReading, MusicItem, Codable, Hashable, CustomStringConvertible,
    CustomDebugStringConvertible {
    init(_resource: _MusicResource)
}

extension _MusicResourceItem {
    public var id: MusicItemID { MusicItemID(_resource.object.id) }

    /// Decodes an Apple Music API resource object (or a library one) of the type's kinds.
    public init(from decoder: any Decoder) throws {
        let resource = try ResourceObject(from: decoder)
        let types = (Self.self as? any ResourceBackedItem.Type)?.resourceTypes ?? []
        guard types.isEmpty || types.contains(resource.type) || resource.type.isEmpty else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                debugDescription: "expected a resource of type \(types.joined(separator: " or ")), found \"\(resource.type)\""))
        }
        self.init(_resource: _MusicResource(resource))
    }

    public func encode(to encoder: any Encoder) throws { try _resource.object.encode(to: encoder) }
    public static func == (a: Self, b: Self) -> Bool { a._resource == b._resource }
    public func hash(into hasher: inout Hasher) { hasher.combine(_resource) }
    public var debugDescription: String { description }
}

extension _MusicResourceReading {
    package var resource: ResourceObject { _resource.object }
}

extension ResourceObject {
    /// What is shown under a container's title: an album's artist, a playlist's curator.
    var containerSubtitle: String? {
        switch type {
        case "albums", "library-albums": string("artistName") ?? ""
        case "playlists", "library-playlists": string("curatorName")
        default: nil
        }
    }
}

/// Not API: an enum whose cases are items of several types, each one resource (search top
/// results, recently played containers, recommended items): identified, titled, decoded and
/// encoded as the resource of its case.
public protocol _MusicResourceUnion: _MusicResourceReading, MusicItem, Codable, CustomStringConvertible,
    CustomDebugStringConvertible {
    /// The case for a resource of that type; nil for a type the enum has no case for.
    init?(_resource: _MusicResource)
}

extension _MusicResourceUnion {
    init?(resource: ResourceObject) { self.init(_resource: _MusicResource(resource)) }

    public var id: MusicItemID { MusicItemID(_resource.object.id) }
    public var title: String { _resource.object.string("name") ?? "" }
    public var artwork: Artwork? { _resource.object.artwork }
    public var description: String { "\(Self.self).\(_resource.object.type)(\(title))" }
    public var debugDescription: String { "\(Self.self).\(_resource.object.type)(id: \"\(id)\", title: \"\(title)\")" }

    public init(from decoder: any Decoder) throws {
        let resource = try ResourceObject(from: decoder)
        guard let item = Self(_resource: _MusicResource(resource)) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                debugDescription: "a \(Self.self) cannot be a resource of type \"\(resource.type)\""))
        }
        self = item
    }

    public func encode(to encoder: any Encoder) throws { try _resource.object.encode(to: encoder) }
}

/// Not API: the attributes songs, music videos, tracks and playlist entries share.
public protocol _MusicTrackAttributes: _MusicResourceReading {}

extension _MusicTrackAttributes {
    public var albumTitle: String? { _resource.object.string("albumName") }
    public var artistName: String { _resource.object.string("artistName") ?? "" }
    public var artistURL: URL? { _resource.object.url("artistUrl") }
    public var artwork: Artwork? { _resource.object.artwork }
    public var contentRating: ContentRating? { _resource.object.contentRating }
    public var duration: TimeInterval? { _resource.object.duration() }
    public var editorialNotes: EditorialNotes? { _resource.object.editorialNotes }
    public var genreNames: [String] { _resource.object.strings("genreNames") ?? [] }
    public var isrc: String? { _resource.object.string("isrc") }
    public var lastPlayedDate: Date? { _resource.object.date("lastPlayedDate") }
    public var libraryAddedDate: Date? { _resource.object.date("dateAdded") }
    public var playCount: Int? { _resource.object.int("playCount") }
    public var playParameters: PlayParameters? { _resource.object.playParameters }
    public var previewAssets: [PreviewAsset]? { _resource.object.previewAssets }
    public var releaseDate: Date? { _resource.object.date("releaseDate") }
    public var title: String { _resource.object.string("name") ?? "" }
    public var url: URL? { _resource.object.url("url") }
}

/// An item type made from a resource, with the resource types it decodes from.
protocol ResourceBackedItem: _MusicResourceItem, MusicPropertyContainer, PropertyLoadable {
    /// Resource types this item decodes from, catalog type first ("songs", "library-songs").
    static var resourceTypes: [String] { get }
}

extension ResourceBackedItem {
    static var catalogType: String { resourceTypes[0] }

    init(resource: ResourceObject) { self.init(_resource: _MusicResource(resource)) }
}

/// An Apple Music API resource object: `id`, `type`, `href`, `attributes`, `relationships`,
/// `views` and `meta`, kept whole so that nothing is lost between a document and an item.
package struct ResourceObject: Codable, Hashable, Sendable {
    package var id: String
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

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(MusicItemID.self, forKey: .id)?.rawValue ?? ""
        type = try container.decodeIfPresent(String.self, forKey: .type) ?? ""
        href = try container.decodeIfPresent(String.self, forKey: .href)
        attributes = try container.decodeIfPresent([String: JSONValue].self, forKey: .attributes) ?? [:]
        relationships = try container.decodeIfPresent([String: Relationship].self, forKey: .relationships) ?? [:]
        views = try container.decodeIfPresent([String: Relationship].self, forKey: .views) ?? [:]
        meta = try container.decodeIfPresent(JSONValue.self, forKey: .meta)
    }

    package func encode(to encoder: any Encoder) throws {
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
    package var jsonValue: JSONValue {
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

    package func string(_ key: String) -> String? { attributes[key]?.string }
    package func int(_ key: String) -> Int? { attributes[key]?.int }
    func bool(_ key: String) -> Bool? { attributes[key]?.bool }
    package func strings(_ key: String) -> [String]? { attributes[key]?.array?.compactMap(\.string) }
    func url(_ key: String) -> URL? { string(key).flatMap { URL(string: $0) } }
    func date(_ key: String) -> Date? { string(key).flatMap(ResourceObject.parseDate) }

    /// Milliseconds attribute as seconds.
    package func duration(_ key: String = "durationInMillis") -> TimeInterval? {
        attributes[key]?.number.map { $0 / 1_000 }
    }

    /// A song's or music video's custom start and end times in the audio it plays (26.4's
    /// `startTime`/`endTime`), from a catalog document's `startTimeInMillis`/`endTimeInMillis`
    /// (checked at import: CatalogDocument); nil without them (the Apple Music API gives none).
    var customStartTime: TimeInterval? { duration("startTimeInMillis") }
    var customEndTime: TimeInterval? { duration("endTimeInMillis") }

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
