import Foundation

/// An ordered collection of music items, with the link to the next batch when there is one.
public struct MusicItemCollection<MusicItemType: MusicItem>: RandomAccessCollection, ExpressibleByArrayLiteral, Sendable {
    public typealias Element = MusicItemType
    public typealias Index = Array<MusicItemType>.Index
    public typealias Indices = Array<MusicItemType>.Indices
    public typealias SubSequence = Array<MusicItemType>.SubSequence
    public typealias Iterator = IndexingIterator<MusicItemCollection<MusicItemType>>
    public typealias ArrayLiteralElement = MusicItemType

    private var items: [MusicItemType]
    private enum CodingKeys: String, CodingKey { case data, next, title, attributes }
    /// A title, when the collection came with one (a view, a chart).
    public private(set) var title: String?
    /// The Apple Music API `next` link of this batch.
    var nextHref: String?

    public init<S: Sequence>(_ elements: S) where S.Element == MusicItemType {
        items = Array(elements)
    }

    public init(arrayLiteral items: MusicItemType...) {
        self.items = items
    }

    init(items: [MusicItemType], title: String? = nil, next: String? = nil) {
        self.items = items
        self.title = title
        nextHref = next
    }

    public var startIndex: Index { items.startIndex }
    public var endIndex: Index { items.endIndex }
    public subscript(position: Index) -> Element { items[position] }
    public subscript(bounds: Range<Index>) -> SubSequence { items[bounds] }
    public func index(after i: Index) -> Index { items.index(after: i) }
    public func index(before i: Index) -> Index { items.index(before: i) }
    public func formIndex(after i: inout Index) { items.formIndex(after: &i) }
    public func formIndex(before i: inout Index) { items.formIndex(before: &i) }
    public func index(_ i: Index, offsetBy distance: Int) -> Index { items.index(i, offsetBy: distance) }
    public func index(_ i: Index, offsetBy distance: Int, limitedBy limit: Index) -> Index? {
        items.index(i, offsetBy: distance, limitedBy: limit)
    }
    public func distance(from start: Index, to end: Index) -> Int { items.distance(from: start, to: end) }
    public var indices: Indices { items.indices }

    /// Whether another batch follows this one.
    public var hasNextBatch: Bool { nextHref != nil }

    /// Appends the next batch's items and takes over its `next` link.
    public static func += (collection: inout MusicItemCollection<MusicItemType>,
                           nextBatchCollection: MusicItemCollection<MusicItemType>) {
        collection.items += nextBatchCollection.items
        collection.nextHref = nextBatchCollection.nextHref
    }

    public var description: String {
        let names = items.prefix(10).map { String(describing: $0) }
        return "MusicItemCollection<\(MusicItemType.self)>(\(title.map { "title: \"\($0)\", " } ?? "")items: [\(names.joined(separator: ", "))\(items.count > 10 ? ", ..." : "")]\(hasNextBatch ? ", hasNextBatch: true" : ""))"
    }
}

extension MusicItemCollection where MusicItemType: Decodable {
    /// Fetches the next batch (up to `limit` items), nil when there is none.
    public func nextBatch(limit: Int? = nil) async throws -> MusicItemCollection<MusicItemType>? {
        guard let nextHref else { return nil }
        return try await catalogBackend().nextBatch(of: MusicItemType.self, href: nextHref, limit: limit)
    }
}

extension MusicItemCollection: CustomStringConvertible, CustomDebugStringConvertible {
    public var debugDescription: String { description }
}

extension MusicItemCollection: Equatable where MusicItemType: Equatable {
    public static func == (left: Self, right: Self) -> Bool {
        left.items == right.items && left.title == right.title && left.nextHref == right.nextHref
    }
}

extension MusicItemCollection: Hashable where MusicItemType: Hashable {
    public func hash(into hasher: inout Hasher) {
        hasher.combine(items)
        hasher.combine(title)
        hasher.combine(nextHref)
    }
}

extension MusicItemCollection where MusicItemType: ResourceBackedItem {
    /// The items of a relationship or view (identifier-only references included as they are).
    init(relationship: ResourceObject.Relationship) {
        self.init(items: relationship.data.map(MusicItemType.init(resource:)),
                  title: relationship.attributes?["title"]?.string, next: relationship.next)
    }

    var relationship: ResourceObject.Relationship {
        ResourceObject.Relationship(next: nextHref, attributes: title.map { ["title": .string($0)] },
                                    data: items.map(\.resource))
    }
}

/// Decodes `{"data": [...], "next": "..."}` (Apple Music API) or a bare array.
extension MusicItemCollection: Decodable where MusicItemType: Decodable {
    public init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var items: [MusicItemType] = []
            while !array.isAtEnd { items.append(try array.decode(MusicItemType.self)) }
            self.init(items: items)
            return
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let items = try container.decodeIfPresent([MusicItemType].self, forKey: .data) ?? []
        let attributes = try container.decodeIfPresent([String: JSONValue].self, forKey: .attributes)
        let title = try container.decodeIfPresent(String.self, forKey: .title) ?? attributes?["title"]?.string
        self.init(items: items, title: title, next: try container.decodeIfPresent(String.self, forKey: .next))
    }
}

extension MusicItemCollection: Encodable where MusicItemType: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(items, forKey: .data)
        try container.encodeIfPresent(nextHref, forKey: .next)
        try container.encodeIfPresent(title, forKey: .title)
    }
}
