import Foundation

/// What the library's items can be grouped by in a `MusicLibrarySectionedRequest`: albums,
/// artists, genres, playlists, or titled sections (the first letter of each item's title).
public protocol MusicLibrarySectionRequestable {}

extension Album: MusicLibrarySectionRequestable {}
extension Artist: MusicLibrarySectionRequestable {}
extension Genre: MusicLibrarySectionRequestable {}
extension Playlist: MusicLibrarySectionRequestable {}
extension TitledSection: MusicLibrarySectionRequestable {}

/// A section with a title only: the letter an item's title starts with ("A"…"Z", "#" for the rest).
public struct TitledSection: Identifiable, Equatable, Hashable, Sendable {
    public typealias ID = MusicItemID
    public let id: MusicItemID
    public let title: String

    init(title: String) {
        id = MusicItemID(title)
        self.title = title
    }

    /// The section of a title: its first letter, accents folded and upper-cased, or "#".
    static func of(_ title: String) -> TitledSection {
        let first = title.trimmingCharacters(in: .whitespaces).foldedForSearch
            .uppercased().first
        guard let first, first.isLetter else { return TitledSection(title: "#") }
        return TitledSection(title: String(first))
    }
}

/// Fetches library items grouped in sections, as in Apple's MusicKit:
/// `MusicLibrarySectionedRequest<Artist, Album>()` is the albums by artist,
/// `MusicLibrarySectionedRequest<Genre, Song>()` the songs by genre,
/// `MusicLibrarySectionedRequest<TitledSection, Song>()` the songs from A to Z.
///
/// Sections come sorted by name (or by `sortSections`), each with its items sorted by title
/// (by track number in album sections) unless `sortItems` says otherwise; sections left without
/// items are left out. `limit` and `offset` page through the sections. An item is in every
/// section it belongs to (a song of two genres is in both).
public struct MusicLibrarySectionedRequest<SectionType: MusicLibrarySectionRequestable, MusicItemType: MusicLibraryRequestable>: Sendable {
    /// At most this many sections.
    public var limit: Int = 25
    /// Sections to skip.
    public var offset: Int = 0
    /// Everything in this library is on this machine, so this changes nothing.
    public var includeOnlyDownloadedContent: Bool = false

    private var items = MusicLibraryRequest<MusicItemType>()
    private var itemsSorted = false
    /// The section filters and sorts, when the section type is itself requestable.
    private var sections: (any LibraryResourceQuery)?

    public init() {}

    // MARK: Items

    public mutating func filterItems(text: String) { items.filter(text: text) }

    public mutating func filterItems(matching keyPath: KeyPath<MusicItemType.LibraryFilter, String>, contains text: String) {
        items.filter(matching: keyPath, contains: text)
    }

    public mutating func filterItems(matching keyPath: KeyPath<MusicItemType.LibraryFilter, String?>, contains text: String) {
        items.filter(matching: keyPath, contains: text)
    }

    public mutating func filterItems<RelatedMusicItemType: MusicItem>(
        matching keyPath: KeyPath<MusicItemType.LibraryFilter, MusicItemCollection<RelatedMusicItemType>?>,
        contains relatedItem: RelatedMusicItemType) {
        items.filter(matching: keyPath, contains: relatedItem)
    }

    public mutating func filterItems<Value: MusicLibraryRequestFilterValueEquatable>(
        matching keyPath: KeyPath<MusicItemType.LibraryFilter, Value>, equalTo value: Value) {
        items.filter(matching: keyPath, equalTo: value)
    }

    public mutating func filterItems<Value: MusicLibraryRequestFilterValueEquatable>(
        matching keyPath: KeyPath<MusicItemType.LibraryFilter, Value?>, equalTo value: Value?) {
        items.filter(matching: keyPath, equalTo: value)
    }

    public mutating func filterItems<Value: MusicLibraryRequestFilterValueMembershipComparable>(
        matching keyPath: KeyPath<MusicItemType.LibraryFilter, Value>, memberOf values: [Value]) {
        items.filter(matching: keyPath, memberOf: values)
    }

    public mutating func filterItems<Value: MusicLibraryRequestFilterValueMembershipComparable>(
        matching keyPath: KeyPath<MusicItemType.LibraryFilter, Value?>, memberOf values: [Value?]) {
        items.filter(matching: keyPath, memberOf: values)
    }

    /// Sorts the items within each section; earlier calls sort first.
    public mutating func sortItems<Value>(by keyPath: KeyPath<MusicItemType.LibrarySortProperties, Value>, ascending: Bool) {
        items.sort(by: keyPath, ascending: ascending)
        itemsSorted = true
    }

    // MARK: Sections

    private mutating func changeSections<Requestable: MusicLibraryRequestable>(
        _ change: (inout MusicLibraryRequest<Requestable>) -> Void) {
        var request = sections as? MusicLibraryRequest<Requestable> ?? MusicLibraryRequest<Requestable>()
        change(&request)
        sections = request
    }

    public mutating func filterSections(text: String) where SectionType: MusicLibraryRequestable {
        changeSections { (request: inout MusicLibraryRequest<SectionType>) in request.filter(text: text) }
    }

    public mutating func filterSections(matching keyPath: KeyPath<SectionType.LibraryFilter, String>, contains text: String)
        where SectionType: MusicLibraryRequestable {
        changeSections { (request: inout MusicLibraryRequest<SectionType>) in request.filter(matching: keyPath, contains: text) }
    }

    public mutating func filterSections(matching keyPath: KeyPath<SectionType.LibraryFilter, String?>, contains text: String)
        where SectionType: MusicLibraryRequestable {
        changeSections { (request: inout MusicLibraryRequest<SectionType>) in request.filter(matching: keyPath, contains: text) }
    }

    public mutating func filterSections<Value: MusicLibraryRequestFilterValueEquatable>(
        matching keyPath: KeyPath<SectionType.LibraryFilter, Value>, equalTo value: Value) where SectionType: MusicLibraryRequestable {
        changeSections { (request: inout MusicLibraryRequest<SectionType>) in request.filter(matching: keyPath, equalTo: value) }
    }

    public mutating func filterSections<Value: MusicLibraryRequestFilterValueEquatable>(
        matching keyPath: KeyPath<SectionType.LibraryFilter, Value?>, equalTo value: Value?) where SectionType: MusicLibraryRequestable {
        changeSections { (request: inout MusicLibraryRequest<SectionType>) in request.filter(matching: keyPath, equalTo: value) }
    }

    public mutating func filterSections<Value: MusicLibraryRequestFilterValueMembershipComparable>(
        matching keyPath: KeyPath<SectionType.LibraryFilter, Value>, memberOf values: [Value]) where SectionType: MusicLibraryRequestable {
        changeSections { (request: inout MusicLibraryRequest<SectionType>) in request.filter(matching: keyPath, memberOf: values) }
    }

    public mutating func filterSections<Value: MusicLibraryRequestFilterValueMembershipComparable>(
        matching keyPath: KeyPath<SectionType.LibraryFilter, Value?>, memberOf values: [Value?]) where SectionType: MusicLibraryRequestable {
        changeSections { (request: inout MusicLibraryRequest<SectionType>) in request.filter(matching: keyPath, memberOf: values) }
    }

    /// Sorts the sections; earlier calls sort first.
    public mutating func sortSections<Value>(by keyPath: KeyPath<SectionType.LibrarySortProperties, Value>, ascending: Bool)
        where SectionType: MusicLibraryRequestable {
        changeSections { (request: inout MusicLibraryRequest<SectionType>) in request.sort(by: keyPath, ascending: ascending) }
    }

    // MARK: Response

    /// Runs the request. Throws `MusicLibrary.Error.permissionDenied` unless the app is authorized.
    public func response() async throws -> MusicLibrarySectionedResponse<SectionType, MusicItemType> {
        let service = try MusicLibrary.authorizedService()
        guard let itemType = MusicItemType.self as? any LibraryRequestBacked.Type else { return .init(sections: []) }
        var members = try items.matchingResources(in: service)
        if !itemsSorted {
            let byTrack = SectionType.self == Album.self
            members.sort { left, right in
                byTrack ? ((left.int("discNumber") ?? 1, left.int("trackNumber") ?? 0) < (right.int("discNumber") ?? 1, right.int("trackNumber") ?? 0))
                    : (left.string("name") ?? "").localizedStandardCompare(right.string("name") ?? "") == .orderedAscending
            }
        }
        let grouping = try sectionsWithKeys(service)
        var byKey: [String: [ResourceObject]] = [:]
        for member in members {
            for key in grouping.keys(member) { byKey[key, default: []].append(member) }
        }
        let sections = grouping.sections.compactMap { section -> MusicLibrarySection<SectionType, MusicItemType>? in
            guard let members = byKey[section.key], !members.isEmpty else { return nil }
            let items = members.compactMap { itemType.init(resource: $0) as? MusicItemType }
            return MusicLibrarySection(id: section.id, section: section.value, items: MusicItemCollection(items: items))
        }
        return MusicLibrarySectionedResponse(sections: Array(sections.dropFirst(max(offset, 0)).prefix(max(limit, 0))))
    }

    /// The candidate sections in order, each with the key its items carry, and the keys of an item.
    private struct Grouping {
        var sections: [(key: String, id: MusicItemID, value: SectionType)]
        var keys: (ResourceObject) -> [String]
    }

    private func sectionsWithKeys(_ service: MusicLibraryService) throws -> Grouping {
        if SectionType.self == TitledSection.self {
            let letters = (Unicode.Scalar("A").value...Unicode.Scalar("Z").value).compactMap { Unicode.Scalar($0).map(String.init) } + ["#"]
            return Grouping(sections: letters.map { letter in (letter, MusicItemID(letter), TitledSection(title: letter) as! SectionType) },
                            keys: { [TitledSection.of($0.string("name") ?? "").title] })
        }
        guard let sectionType = SectionType.self as? any LibraryRequestBacked.Type else { return Grouping(sections: [], keys: { _ in [] }) }
        var resources: [ResourceObject]
        if let sections {
            resources = try sections.matchingResources(in: service)
        } else {
            resources = try service.items(sectionType.libraryType)
                .sorted { ($0.string("name") ?? "").localizedStandardCompare($1.string("name") ?? "") == .orderedAscending }
        }
        let made = resources.compactMap { resource in
            (sectionType.init(resource: resource) as? SectionType).map { (resource, $0) }
        }
        func fold(_ text: String?) -> String { MusicLibraryService.IndexedResource.fold(text ?? "") }
        switch sectionType.libraryType {
        case "albums":
            return Grouping(sections: made.map { ("\(fold($0.0.string("name")))\u{1}\(fold($0.0.string("artistName")))", MusicItemID($0.0.id), $0.1) },
                            keys: { song in LibraryAttributes.albumKey(of: song).map { [fold($0.name) + "\u{1}" + fold($0.artist)] } ?? [] })
        case "artists":
            return Grouping(sections: made.map { (fold($0.0.string("name")), MusicItemID($0.0.id), $0.1) },
                            keys: { [fold($0.string("artistName"))] })
        case "genres":
            return Grouping(sections: made.map { (fold($0.0.string("name")), MusicItemID($0.0.id), $0.1) },
                            keys: { ($0.strings("genreNames") ?? []).map(fold) })
        case "playlists":
            // A playlist's section holds its entries: an item belongs where its ID is listed.
            var playlistsOfItem: [String: [String]] = [:]
            for (resource, _) in made {
                for entry in resource.relationships["tracks"]?.data ?? [] {
                    playlistsOfItem[entry.id, default: []].append(resource.id)
                }
            }
            return Grouping(sections: made.map { ($0.0.id, MusicItemID($0.0.id), $0.1) },
                            keys: { playlistsOfItem[$0.id] ?? [] })
        default:
            return Grouping(sections: [], keys: { _ in [] })
        }
    }
}

/// A library request whose matching resources a sectioned request reads (its section query).
protocol LibraryResourceQuery: Sendable {
    func matchingResources(in service: MusicLibraryService) throws -> [ResourceObject]
}

extension MusicLibraryRequest: LibraryResourceQuery {}

/// The sections a sectioned library request found.
public struct MusicLibrarySectionedResponse<SectionType: MusicLibrarySectionRequestable, MusicItemType: MusicLibraryRequestable>:
    CustomStringConvertible, CustomDebugStringConvertible {
    public let sections: [MusicLibrarySection<SectionType, MusicItemType>]

    init(sections: [MusicLibrarySection<SectionType, MusicItemType>]) {
        self.sections = sections
    }

    public var description: String {
        "MusicLibrarySectionedResponse<\(SectionType.self), \(MusicItemType.self)>(sections: \(sections.count))"
    }
    public var debugDescription: String {
        "MusicLibrarySectionedResponse<\(SectionType.self), \(MusicItemType.self)>(sections: \(sections.map(\.debugDescription)))"
    }
}

extension MusicLibrarySectionedResponse: Sendable where SectionType: Sendable {}
extension MusicLibrarySectionedResponse: Equatable where SectionType: Equatable, MusicItemType: Equatable {}
extension MusicLibrarySectionedResponse: Hashable where SectionType: Hashable, MusicItemType: Hashable {}

/// One section: the album, artist, genre, playlist or title it is for (its properties read
/// through the section, `section.title`), and its items.
@dynamicMemberLookup
public struct MusicLibrarySection<SectionType: MusicLibrarySectionRequestable, MusicItemType: MusicLibraryRequestable>:
    Identifiable, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ID = MusicItemID
    public let id: MusicItemID
    private let section: SectionType
    public let items: MusicItemCollection<MusicItemType>

    init(id: MusicItemID, section: SectionType, items: MusicItemCollection<MusicItemType>) {
        self.id = id
        self.section = section
        self.items = items
    }

    public subscript<T>(dynamicMember keyPath: KeyPath<SectionType, T>) -> T { section[keyPath: keyPath] }

    public var description: String { "MusicLibrarySection(\(section), items: \(items.count))" }
    public var debugDescription: String { "MusicLibrarySection(id: \"\(id)\", \(section), items: \(items.debugDescription))" }
}

extension MusicLibrarySection: Sendable where SectionType: Sendable {}
extension MusicLibrarySection: Equatable where SectionType: Equatable, MusicItemType: Equatable {}
extension MusicLibrarySection: Hashable where SectionType: Hashable, MusicItemType: Hashable {}
