import Foundation

/// A property of a music item type that can be requested (`Song.artists` as `.artists`).
public class PartialMusicProperty<Root>: Hashable, @unchecked Sendable, CustomStringConvertible {
    // @unchecked: every stored property is an immutable value.
    typealias Source = MusicPropertyKind

    /// The Swift name, e.g. "topSongs".
    let name: String
    /// The Apple Music API key, e.g. "top-songs".
    let key: String
    let source: Source

    init(name: String, key: String, source: Source) {
        self.name = name
        self.key = key
        self.source = source
    }

    public static func == (left: PartialMusicProperty<Root>, right: PartialMusicProperty<Root>) -> Bool {
        left.key == right.key && left.source == right.source
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
        hasher.combine(source)
    }

    public var description: String { name }
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
    PartialMusicAsyncProperty<Root>, @unchecked Sendable {}

/// An attribute of `Root` returned only when asked for.
public final class MusicExtendedAttributeProperty<Root, Value: Decodable>: PartialMusicAsyncProperty<Root>, @unchecked Sendable {}

/// An attribute of `Root`.
public final class MusicAttributeProperty<Root, Value: Decodable>: PartialMusicProperty<Root>, @unchecked Sendable {}

/// Where `with(_:preferredSource:)` loads properties from.
public enum MusicPropertySource: Equatable, Hashable, Sendable, CaseIterable {
    case catalog
    case library
}

extension MusicItem where Self: MusicPropertyContainer {
    /// A copy of the item with `properties` loaded (relationships and associations filled in).
    public func with(_ properties: PartialMusicAsyncProperty<Self>...) async throws -> Self {
        try await with(properties)
    }

    public func with(_ properties: [PartialMusicAsyncProperty<Self>]) async throws -> Self {
        try await with(properties, preferredSource: isLibraryItem ? .library : .catalog)
    }

    public func with(_ properties: PartialMusicAsyncProperty<Self>..., preferredSource: MusicPropertySource) async throws -> Self {
        try await with(properties, preferredSource: preferredSource)
    }

    public func with(_ properties: [PartialMusicAsyncProperty<Self>], preferredSource: MusicPropertySource) async throws -> Self {
        guard let item = self as? any ResourceBackedItem else { return self }
        let loaded = try await MusicCatalogService.current().load(properties.map { ($0.key, $0.source) }, for: item.resource,
                                                                  preferredSource: preferredSource)
        return type(of: item).init(resource: loaded) as! Self
    }

    private var isLibraryItem: Bool {
        (self as? any ResourceBackedItem)?.resource.type.hasPrefix("library-") ?? false
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
