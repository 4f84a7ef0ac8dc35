import Foundation

/// A requestable property of any item type: what `PartialMusicProperty` values have in common.
public class AnyMusicProperty: Hashable, @unchecked Sendable, CustomStringConvertible {
    // @unchecked: every stored property is an immutable value.
    typealias Source = MusicPropertyKind

    /// The Swift name, e.g. "topSongs".
    let name: String
    /// The Apple Music API key, e.g. "top-songs".
    let key: String
    let source: Source
    /// The item type the property belongs to (`Song.artists` and `Album.artists` differ).
    let root: ObjectIdentifier
    let rootName: String

    init(name: String, key: String, source: Source, root: Any.Type) {
        self.name = name
        self.key = key
        self.source = source
        self.root = ObjectIdentifier(root)
        rootName = String(describing: root)
    }

    public static func == (left: AnyMusicProperty, right: AnyMusicProperty) -> Bool {
        left.key == right.key && left.source == right.source && left.root == right.root
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
        hasher.combine(source)
        hasher.combine(root)
    }

    public var description: String { "\(rootName).\(name)" }
}

/// A property of a music item type that can be requested (`Song.artists` as `.artists`).
public class PartialMusicProperty<Root>: AnyMusicProperty, @unchecked Sendable {
    init(name: String, key: String, source: Source) {
        super.init(name: name, key: key, source: source, root: Root.self)
    }
}

/// Where a requestable property lives in an Apple Music API resource.
enum MusicPropertyKind: Hashable, Sendable {
    /// A relationship of the resource (`relationships`).
    case relationship
    /// An association (`views`).
    case view
    /// An attribute only returned when asked for (`extend=`).
    case extendedAttribute
}

/// A property that is loaded asynchronously (from the catalog or the library).
public class PartialMusicAsyncProperty<Root>: PartialMusicProperty<Root>, @unchecked Sendable {}

/// A relationship or association of `Root` holding `RelatedMusicItemType` items.
public final class MusicRelationshipProperty<Root, RelatedMusicItemType: MusicItem & Decodable>:
    PartialMusicAsyncProperty<Root>, @unchecked Sendable {
    /// "Album.tracks (relationship to Track)".
    public override var description: String {
        "\(super.description) (\(source == .view ? "association" : "relationship") to \(RelatedMusicItemType.self))"
    }
}

/// An attribute of `Root` returned only when asked for.
public final class MusicExtendedAttributeProperty<Root, Value: Decodable>: PartialMusicAsyncProperty<Root>, @unchecked Sendable {
    /// "Song.audioVariants (extended attribute, [AudioVariant])".
    public override var description: String { "\(super.description) (extended attribute, \(Value.self))" }
}

/// An attribute of `Root`.
public final class MusicAttributeProperty<Root, Value: Decodable>: PartialMusicProperty<Root>, @unchecked Sendable {
    /// "Song.title (attribute, String)".
    public override var description: String { "\(super.description) (attribute, \(Value.self))" }
}

/// Where `with(_:preferredSource:)` loads properties from.
public enum MusicPropertySource: String, Codable, Equatable, Hashable, Sendable, CaseIterable {
    case catalog
    case library
}

extension MusicPropertyContainer {
    /// A copy of the item with `properties` loaded (relationships and associations filled in).
    public func with(_ properties: PartialMusicAsyncProperty<Self>...) async throws -> Self {
        try await loading(properties, preferredSource: nil)
    }

    public func with(_ properties: [PartialMusicAsyncProperty<Self>]) async throws -> Self {
        try await loading(properties, preferredSource: nil)
    }

    public func with(_ properties: PartialMusicAsyncProperty<Self>..., preferredSource: MusicPropertySource) async throws -> Self {
        try await loading(properties, preferredSource: preferredSource)
    }

    public func with(_ properties: [PartialMusicAsyncProperty<Self>], preferredSource: MusicPropertySource) async throws -> Self {
        try await loading(properties, preferredSource: preferredSource)
    }

    /// The item made again from its resource with `properties` loaded, from the library for a
    /// library item and from the catalog otherwise unless `preferredSource` says.
    func loading(_ properties: [PartialMusicAsyncProperty<Self>], preferredSource: MusicPropertySource?) async throws -> Self {
        guard let item = self as? any PropertyLoadable else { return self }
        let source = preferredSource ?? (item.resource.type.hasPrefix("library-") ? .library : .catalog)
        let loads = properties.map { (key: $0.key, source: $0.source) }
        // The library's properties are always the local store's; the catalog's, the backend's.
        let backend: any CatalogBackend = source == .catalog ? try await catalogBackend() : try await MusicCatalogService.current()
        let loaded = try await backend.load(loads, for: item.resource, preferredSource: source)
        return item.replacingResource(loaded) as! Self
    }
}

// Apple declares `with` on decodable music items as well (the same loading).
extension MusicItem where Self: MusicPropertyContainer & Decodable {
    /// A copy of the item with `properties` loaded (relationships and associations filled in).
    public func with(_ properties: PartialMusicAsyncProperty<Self>...) async throws -> Self {
        try await loading(properties, preferredSource: nil)
    }

    public func with(_ properties: [PartialMusicAsyncProperty<Self>]) async throws -> Self {
        try await loading(properties, preferredSource: nil)
    }

    public func with(_ properties: PartialMusicAsyncProperty<Self>..., preferredSource: MusicPropertySource) async throws -> Self {
        try await loading(properties, preferredSource: preferredSource)
    }

    public func with(_ properties: [PartialMusicAsyncProperty<Self>], preferredSource: MusicPropertySource) async throws -> Self {
        try await loading(properties, preferredSource: preferredSource)
    }
}

/// An item made from an Apple Music API resource, which `with(_:)` can load again with more.
protocol PropertyLoadable {
    var resource: ResourceObject { get }
    /// The same item made from `resource`.
    func replacingResource(_ resource: ResourceObject) -> Self
}

extension ResourceBackedItem {
    func replacingResource(_ resource: ResourceObject) -> Self { Self(resource: resource) }
}

extension Playlist.Entry: MusicPropertyContainer, PropertyLoadable {
    func replacingResource(_ resource: ResourceObject) -> Playlist.Entry { Playlist.Entry(resource: resource, position: position) }
}

extension Playlist.Entry.Item: MusicPropertyContainer, PropertyLoadable {
    func replacingResource(_ resource: ResourceObject) -> Playlist.Entry.Item {
        switch self {
        case .song: .song(Song(resource: resource))
        case .musicVideo: .musicVideo(MusicVideo(resource: resource))
        }
    }
}

extension Song: MusicPropertyContainer {}
extension Album: MusicPropertyContainer {}
extension Artist: MusicPropertyContainer {}
extension Playlist: MusicPropertyContainer {}
extension MusicVideo: MusicPropertyContainer {}
extension Curator: MusicPropertyContainer {}
extension RadioShow: MusicPropertyContainer {}
extension RecordLabel: MusicPropertyContainer {}
extension Station: MusicPropertyContainer {}
extension Genre: MusicPropertyContainer {}
extension MusicPlayer.Queue.Entry.Item: MusicPropertyContainer {}
