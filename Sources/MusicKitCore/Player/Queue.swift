import Foundation
import Observation
import Synchronization

extension MusicPlayer {
    /// A player's queue: its entries and the current one. Observable: `currentEntry` and the
    /// entries changes are seen by `withObservationTracking`.
    ///
    /// A queue made from an album or a playlist (`init(album:startingAt:)`,
    /// `init(playlist:startingAt:)`) loads its tracks lazily, a page at a time, as the player
    /// or the reader reaches them: a 100,000-track playlist starts as fast as a 10-track one.
    public class Queue: Observable, ExpressibleByArrayLiteral, Equatable, Hashable, @unchecked Sendable, CustomStringConvertible {
        // @unchecked: `contents` and `currentID` are behind `lock` (the contents has its own lock).
        public typealias ArrayLiteralElement = any PlayableMusicItem

        let registrar = ObservationRegistrar()
        private let lock = NSLock()
        private var _contents: QueueContents
        private var currentID: String?
        /// Called after the entries or the current entry changed through the queue's API.
        var onChange: (@Sendable (Queue, Change) -> Void)?

        /// Whether playing this queue is recorded in the listening history ("Recently Played").
        /// It still respects the person's "Use Listening History" setting.
        /// (Linux addition)
        public var affectsListeningHistory: Bool {
            get { registrar.access(self, keyPath: \.affectsListeningHistory); return lock.withLock { _affectsListeningHistory } }
            set { registrar.withMutation(of: self, keyPath: \.affectsListeningHistory) { lock.withLock { _affectsListeningHistory = newValue } } }
        }
        private var _affectsListeningHistory = true

        /// A queue of `playableItems`, starting at `startPlayableItem` (the first when nil).
        public required init<S: Sequence, PlayableMusicItemType: PlayableMusicItem>(
            for playableItems: S, startingAt startPlayableItem: S.Element? = nil
        ) where S.Element == PlayableMusicItemType {
            let items = Array(playableItems)
            (_contents, currentID) = Queue.contents(for: items, startingAt: startPlayableItem.flatMap { start in
                items.firstIndex { $0.id == start.id }
            })
        }

        /// A queue of entries, starting at `startEntry` (the first when nil).
        public required init<S: Sequence>(_ entries: S, startingAt startEntry: S.Element? = nil) where S.Element == Entry {
            let given = Array(entries)
            let owned = given.map { $0.owned() }
            _contents = QueueContents(entries: owned)
            if let startEntry, let index = given.firstIndex(where: { $0.id == startEntry.id }) {
                currentID = owned[index].id
            } else {
                currentID = owned.first?.id
            }
        }

        /// The tracks of `album`, loaded as they are needed, starting at `startTrack`.
        public required init(album: Album, startingAt startTrack: Track) {
            _contents = QueueContents(lazy: PlaybackServices.tracks(of: album.resource))
            // An album is short: look for the track among its first pages.
            currentID = _contents.firstEntry(loadingAtMost: 500) { $0.resource.id == startTrack.id.rawValue }?.id
                ?? _contents.entry(at: 0)?.id
        }

        /// The entries of `playlist`, loaded as they are needed, starting at `startPlaylistEntry`.
        public required init(playlist: Playlist, startingAt startPlaylistEntry: Playlist.Entry) {
            _contents = QueueContents(lazy: PlaybackServices.tracks(of: playlist.resource))
            // A playlist entry knows its position: no need to load the tracks before it.
            let position = min(max(startPlaylistEntry.position, 0), max(_contents.count - 1, 0))
            currentID = _contents.entry(at: position)?.id ?? _contents.entry(at: 0)?.id
        }

        /// `[song1, album, playlist]`: songs as entries, albums' and playlists' tracks lazily.
        public required convenience init(arrayLiteral elements: any PlayableMusicItem...) {
            self.init(items: elements)
        }

        package init(items: [any PlayableMusicItem], startingAt startIndex: Int? = nil) {
            (_contents, currentID) = Queue.contents(for: items, startingAt: startIndex)
        }

        /// Entries for `items` (songs as they are, containers lazily) and the ID of the first
        /// entry of `items[startIndex]`.
        private static func contents(for items: [any PlayableMusicItem], startingAt startIndex: Int?)
            -> (QueueContents, String?) {
            let parts = items.map { QueueContents.part(for: $0) }
            let contents = QueueContents(parts: parts)
            let offset = startIndex.map { index in parts[..<index].reduce(0) { $0 + $1.count } } ?? 0
            return (contents, (contents.entry(at: offset) ?? contents.entry(at: 0))?.id)
        }

        /// The entries (observed: reading it inside `withObservationTracking` sees edits).
        var contents: QueueContents {
            registrar.access(self, keyPath: \.contents)
            return lock.withLock { _contents }
        }

        /// The entries and the current entry's ID, for the player's threads (not observed).
        package var snapshot: (contents: QueueContents, currentID: String?) { lock.withLock { (_contents, currentID) } }

        /// What changed through the queue's API (the player follows it).
        enum Change {
            /// Entries were inserted, removed or moved; the current entry stayed.
            case entries
            /// The current entry is another one (set, or the playing one was removed).
            case currentEntry
        }

        /// Replaces the entries. When the current entry is gone, the entry that took its place
        /// (or the last) becomes current.
        package func replaceContents(_ contents: QueueContents) {
            var currentMoved = false
            registrar.withMutation(of: self, keyPath: \.contents) {
                let (old, current) = lock.withLock { (_contents, currentID) }
                var replacement = current
                if let current, contents.index(ofEntryID: current) == nil {
                    let oldIndex = old.index(ofEntryID: current) ?? 0
                    replacement = contents.entry(at: min(oldIndex, contents.count - 1))?.id
                } else if current == nil {
                    replacement = contents.entry(at: 0)?.id
                }
                lock.withLock { _contents = contents }
                if replacement != current {
                    currentMoved = current != nil
                    setCurrentEntryID(replacement)
                }
            }
            onChange?(self, currentMoved ? .currentEntry : .entries)
        }

        /// Takes `other`'s entries, current entry and history setting (the player keeps one
        /// queue object, so views that hold it see what a new queue brings).
        func adopt(_ other: Queue) {
            let (contents, current) = other.snapshot
            registrar.withMutation(of: self, keyPath: \.contents) { lock.withLock { _contents = contents } }
            setCurrentEntryID(current)
            affectsListeningHistory = other.affectsListeningHistory
        }

        /// The entry playing (or to play first). Setting it makes the player jump there.
        public var currentEntry: Entry? {
            get {
                registrar.access(self, keyPath: \.currentEntry)
                let (contents, id) = lock.withLock { (_contents, currentID) }
                guard let id, let index = contents.index(ofEntryID: id) else { return nil }
                return contents.entry(at: index)
            }
            set {
                guard let id = newValue?.id, contents.index(ofEntryID: id) != nil else { return }
                setCurrentEntryID(id)
                onChange?(self, .currentEntry)
            }
        }

        package var currentEntryID: String? { lock.withLock { currentID } }

        /// Moves the current entry (the player calls this when an entry is heard).
        package func setCurrentEntryID(_ id: String?) {
            guard lock.withLock({ currentID }) != id else { return }
            registrar.withMutation(of: self, keyPath: \.currentEntry) {
                lock.withLock { currentID = id }
            }
        }

        public static func == (left: Queue, right: Queue) -> Bool { left === right }
        public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

        public enum EntryInsertionPosition: Equatable, Hashable, Sendable {
            /// Right after the current entry: it plays next.
            case afterCurrentEntry
            /// At the end of the queue.
            case tail
        }

        /// Inserts an entry (a transient one becomes the queue's own, with a new `id`).
        public func insert(_ entry: Entry, position: EntryInsertionPosition) async throws {
            insert([.segment(.entries([entry.owned()]))], position: position)
        }

        /// Inserts a song, or an album's or a playlist's tracks (loaded lazily).
        public func insert<PlayableMusicItemType: PlayableMusicItem>(_ playableItem: PlayableMusicItemType,
                                                                    position: EntryInsertionPosition) async throws {
            insert([QueueContents.part(for: playableItem)], position: position)
        }

        /// Inserts several items, in order.
        public func insert<S: Sequence, PlayableMusicItemType: PlayableMusicItem>(
            _ playableItems: S, position: EntryInsertionPosition
        ) async throws where S.Element == PlayableMusicItemType {
            insert(playableItems.map { QueueContents.part(for: $0) }, position: position)
        }

        /// Inserts items of different types, in order, in one change (MPD's `findadd` and `load`).
        package func insert(items: [any PlayableMusicItem], position: EntryInsertionPosition) {
            insert(items.map { QueueContents.part(for: $0) }, position: position)
        }

        /// Inserts several entries, in order.
        public func insert<S: Sequence>(_ entries: S, position: EntryInsertionPosition) async throws where S.Element == Entry {
            insert([.segment(.entries(entries.map { $0.owned() }))], position: position)
        }

        private func insert(_ parts: [QueueContents.Part], position: EntryInsertionPosition) {
            let contents = self.contents.copy()
            let index: Int
            switch position {
            case .tail: index = contents.count
            case .afterCurrentEntry:
                index = currentEntryID.flatMap { contents.index(ofEntryID: $0) }.map { $0 + 1 } ?? 0
            }
            contents.insert(parts, at: index)
            replaceContents(contents)
        }

        public var description: String {
            let contents = self.contents
            return "Queue(\(contents.count) entries, current: \(currentEntry.map { "\"\($0.title)\"" } ?? "none"))"
        }

        /// One entry of a queue: a song or a music video, and where in it to start and stop.
        public struct Entry: Identifiable, Equatable, Hashable, Sendable, CustomStringConvertible {
            public typealias ID = String

            /// Unique within the player.
            public let id: String
            package let resource: ResourceObject
            public let startTime: TimeInterval?
            public let endTime: TimeInterval?
            /// True for an entry made by `init(_:startTime:endTime:)` that no queue holds yet.
            public let isTransient: Bool
            /// The album or playlist the entry came from (for the listening history).
            let container: ResourceObject?
            /// Why the entry cannot play though it holds a place in the queue (its page of an
            /// album or a playlist could not be loaded).
            let unavailableReason: String?
            package let serial: UInt64

            private static let nextSerial = Atomic<UInt64>(1)

            init(resource: ResourceObject, container: ResourceObject? = nil, startTime: TimeInterval? = nil,
                 endTime: TimeInterval? = nil, isTransient: Bool = false, unavailableReason: String? = nil, id: String? = nil) {
                serial = Entry.nextSerial.add(1, ordering: .relaxed).oldValue
                // An entry another process made keeps that process's ID (the system player's).
                self.id = id ?? Entry.id(forSerial: serial)
                self.resource = resource
                self.container = container
                self.startTime = startTime
                self.endTime = endTime
                self.isTransient = isTransient
                self.unavailableReason = unavailableReason
            }

            /// "E" and the serial in hex, at least 8 digits ("E0000002A"). Not `String(format:)`,
            /// which builds a locale and looks up the runtime's conformances for its arguments on
            /// first use: the first entry is made before a play command's first sound.
            static func id(forSerial serial: UInt64) -> String {
                let digits = String(serial, radix: 16, uppercase: true)
                return "E" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
            }

            /// An entry for an item, to insert into a queue.
            public init(_ playableMusicItem: any PlayableMusicItem, startTime: TimeInterval? = nil, endTime: TimeInterval? = nil) {
                let resource = (playableMusicItem as? any ResourceBackedItem)?.resource
                    ?? ResourceObject(id: playableMusicItem.id.rawValue, type: "songs")
                self.init(resource: resource, startTime: startTime, endTime: endTime, isTransient: true)
            }

            /// Where the entry starts and ends as played: its own times, else its item's custom
            /// ones (`Song.startTime`/`endTime`), as Apple's player honours a song's.
            var playedStartTime: TimeInterval? { startTime ?? resource.customStartTime }
            var playedEndTime: TimeInterval? { endTime ?? resource.customEndTime }

            /// This entry as a queue holds it.
            func owned() -> Entry {
                guard isTransient else { return self }
                return Entry(resource: resource, container: container, startTime: startTime, endTime: endTime, isTransient: false,
                             unavailableReason: unavailableReason)
            }

            /// What the entry plays (a queue takes it again: Apple's `PlayableMusicItem`).
            public enum Item: MusicItem, PlayableMusicItem, ResourceBackedItem, Identifiable, Equatable, Hashable, Sendable, Codable,
                CustomStringConvertible, CustomDebugStringConvertible {
                public typealias ID = MusicItemID
                case musicVideo(MusicVideo)
                case song(Song)

                static let resourceTypes = Track.resourceTypes

                public init(_resource: _MusicResource) { self.init(track: Track(_resource: _resource)) }

                public var _resource: _MusicResource {
                    switch self { case .song(let song): song._resource; case .musicVideo(let video): video._resource }
                }

                public var playParameters: PlayParameters? {
                    switch self { case .song(let song): song.playParameters; case .musicVideo(let video): video.playParameters }
                }
                public var description: String {
                    switch self { case .song(let song): song.description; case .musicVideo(let video): video.description }
                }

                init(track: Track) {
                    switch track { case .song(let song): self = .song(song); case .musicVideo(let video): self = .musicVideo(video) }
                }
            }

            public var item: Item? {
                guard !isTransient else { return nil }
                return Item(track: Track(resource: resource))
            }

            /// The item of an entry no queue holds yet.
            public var transientItem: (any PlayableMusicItem)? {
                guard isTransient else { return nil }
                return Track(resource: resource)
            }

            public var title: String { resource.string("name") ?? "" }
            /// The artist, and the album when there is one.
            public var subtitle: String? {
                let parts = [resource.string("artistName"), resource.string("albumName")].compactMap { $0 }.filter { !$0.isEmpty }
                return parts.isEmpty ? nil : parts.joined(separator: " — ")
            }
            public var artwork: Artwork? { resource.artwork }
            public var description: String { "Entry(id: \(id), title: \"\(title)\")" }

            public static func == (a: Entry, b: Entry) -> Bool { a.id == b.id && a.resource == b.resource }
            public func hash(into hasher: inout Hasher) { hasher.combine(id) }
        }
    }
}

/// A queue's entries as segments: entries made, and ranges of a lazy source not loaded yet.
/// Loading happens a page at a time when an index is read. Copy before changing (the queue
/// and its `Entries` values share one until one of them changes).
///
/// Thread safety: any thread (a lock guards the segments; the player's decoder thread reads it).
package final class QueueContents: @unchecked Sendable {
    enum Segment {
        case entries([MusicPlayer.Queue.Entry])
        case lazy(ContainerTracks, Range<Int>)

        var count: Int {
            switch self { case .entries(let entries): entries.count; case .lazy(_, let range): range.count }
        }
    }

    static let pageSize = 64
    private let lock = NSLock()
    private var segments: [Segment]

    /// One item's share of a queue: a song as a made entry, an album's or a playlist's tracks
    /// as a lazy range.
    enum Part {
        case segment(Segment)
        case nothing

        var count: Int { if case .segment(let segment) = self { segment.count } else { 0 } }
    }

    init(entries: [MusicPlayer.Queue.Entry] = []) {
        segments = entries.isEmpty ? [] : [.entries(entries)]
    }

    init(lazy source: ContainerTracks) {
        segments = [.lazy(source, 0..<source.count)]
    }

    convenience init(parts: [Part]) {
        self.init(segments: QueueContents.segments(of: parts))
    }

    private init(segments: [Segment]) {
        self.segments = segments
    }

    private static func segments(of parts: [Part]) -> [Segment] {
        parts.compactMap { if case .segment(let segment) = $0, segment.count > 0 { segment } else { nil } }
    }

    func copy() -> QueueContents { lock.withLock { QueueContents(segments: segments) } }

    /// The segments as they are (the system player sends and keeps a queue this way).
    var segmentsForWire: [Segment] { lock.withLock { segments } }

    package var count: Int { lock.withLock { segments.reduce(0) { $0 + $1.count } } }

    /// Entries made so far (the rest are lazy).
    var loadedEntryCount: Int {
        lock.withLock { segments.reduce(0) { if case .entries(let entries) = $1 { $0 + entries.count } else { $0 } } }
    }

    /// An item as queue entries: a song or a video as one entry, an album or a playlist as its
    /// tracks (loaded lazily), a station as nothing (radio streams are not in this catalog).
    static func part(for item: any PlayableMusicItem) -> Part {
        // A song first: casting to a type is a comparison, where the first cast to the protocol
        // scans the runtime's conformance records (~0.1 ms, before a play command's first sound).
        let resource: ResourceObject
        if let song = item as? Song {
            resource = song.resource
        } else if let backed = item as? any ResourceBackedItem {
            resource = backed.resource
        } else if let reading = item as? any _MusicResourceReading {
            // A playlist's entry or its item, a recently played container: the resource it reads.
            resource = reading._resource.object
        } else {
            return .nothing
        }
        switch resource.type {
        case "albums", "playlists", "library-albums", "library-playlists":
            let source = PlaybackServices.tracks(of: resource)
            return .segment(.lazy(source, 0..<source.count))
        case "stations":
            return .nothing
        default:
            return .segment(.entries([MusicPlayer.Queue.Entry(resource: resource)]))
        }
    }

    /// The entry at `index`, loading its page when it is in a lazy range.
    package func entry(at index: Int) -> MusicPlayer.Queue.Entry? {
        guard index >= 0 else { return nil }
        return lock.withLock {
            let pageStart = index - index % QueueContents.pageSize
            loadLocked(pageStart..<(pageStart + QueueContents.pageSize))
            return entryLocked(at: index)
        }
    }

    /// The entries in `range` (loading what is lazy there in one go).
    package func entries(in range: Range<Int>) -> [MusicPlayer.Queue.Entry] {
        lock.withLock {
            loadLocked(range)
            var result: [MusicPlayer.Queue.Entry] = []
            result.reserveCapacity(range.count)
            var offset = 0
            for segment in segments {
                defer { offset += segment.count }
                guard case .entries(let entries) = segment, offset + entries.count > range.lowerBound else { continue }
                if offset >= range.upperBound { break }
                let from = max(range.lowerBound - offset, 0)
                let to = min(range.upperBound - offset, entries.count)
                result.append(contentsOf: entries[from..<to])
            }
            return result
        }
    }

    /// The entry at `index` if it is loaded; nil when it is not (nothing is loaded).
    func loadedEntry(at index: Int) -> MusicPlayer.Queue.Entry? {
        guard index >= 0 else { return nil }
        return lock.withLock { entryLocked(at: index) }
    }

    private func entryLocked(at index: Int) -> MusicPlayer.Queue.Entry? {
        var offset = 0
        for segment in segments {
            if index < offset + segment.count {
                if case .entries(let entries) = segment { return entries[index - offset] }
                return nil
            }
            offset += segment.count
        }
        return nil
    }

    /// Turns the lazy ranges overlapping `range` (positions) into entries, one per position (a
    /// page that cannot be loaded becomes entries that say why).
    private func loadLocked(_ range: Range<Int>) {
        var offset = 0
        var segmentIndex = 0
        while segmentIndex < segments.count, offset < range.upperBound {
            let segment = segments[segmentIndex]
            let end = offset + segment.count
            guard case .lazy(let source, let lazyRange) = segment, end > range.lowerBound else {
                offset = end
                segmentIndex += 1
                continue
            }
            // The overlap, in the source's positions.
            let from = lazyRange.lowerBound + max(range.lowerBound - offset, 0)
            let to = lazyRange.lowerBound + min(range.upperBound - offset, segment.count)
            let loaded: [MusicPlayer.Queue.Entry]
            do {
                loaded = try source.tracks(from..<to).map { MusicPlayer.Queue.Entry(resource: $0, container: source.container) }
            } catch {
                // The positions stay in the queue (counts stay true) as entries that fail with
                // the reason when they are played.
                loaded = (from..<to).map { position in
                    MusicPlayer.Queue.Entry(resource: ResourceObject(id: "\(source.container.id)#\(position)", type: "songs"),
                                            container: source.container, unavailableReason: error.reason)
                }
            }
            var replacement: [Segment] = []
            if from > lazyRange.lowerBound { replacement.append(.lazy(source, lazyRange.lowerBound..<from)) }
            replacement.append(.entries(loaded))
            if to < lazyRange.upperBound { replacement.append(.lazy(source, to..<lazyRange.upperBound)) }
            segments.replaceSubrange(segmentIndex...segmentIndex, with: replacement)
            offset = end
            segmentIndex += replacement.count
        }
    }

    /// The index of the entry with `id`, among the entries made so far.
    package func index(ofEntryID id: String) -> Int? {
        lock.withLock {
            var offset = 0
            for segment in segments {
                if case .entries(let entries) = segment, let index = entries.firstIndex(where: { $0.id == id }) {
                    return offset + index
                }
                offset += segment.count
            }
            return nil
        }
    }

    /// The first entry matching `predicate`, loading at most `limit` entries to find it.
    func firstEntry(loadingAtMost limit: Int = .max, where predicate: (MusicPlayer.Queue.Entry) -> Bool)
        -> MusicPlayer.Queue.Entry? {
        var index = 0
        let total = count
        while index < min(total, limit) {
            if let entry = entry(at: index), predicate(entry) { return entry }
            index += 1
        }
        return nil
    }

    func insert(_ parts: [Part], at index: Int) {
        split(at: index)
        lock.withLock {
            var offset = 0
            var position = segments.count
            for (segmentIndex, segment) in segments.enumerated() {
                if offset == index { position = segmentIndex; break }
                offset += segment.count
            }
            segments.insert(contentsOf: QueueContents.segments(of: parts), at: position)
        }
    }

    /// Replaces `range` (indices) with `entries`.
    func replaceSubrange(_ range: Range<Int>, with entries: [MusicPlayer.Queue.Entry]) {
        split(at: range.upperBound)
        split(at: range.lowerBound)
        lock.withLock {
            var offset = 0
            var first: Int?
            var last = -1
            for (segmentIndex, segment) in segments.enumerated() {
                if offset >= range.lowerBound && offset + segment.count <= range.upperBound && segment.count > 0 {
                    if first == nil { first = segmentIndex }
                    last = segmentIndex
                } else if offset == range.lowerBound && first == nil {
                    first = segmentIndex
                    last = segmentIndex - 1
                }
                offset += segment.count
            }
            let start = first ?? segments.count
            let removal = start..<max(start, last + 1)
            segments.replaceSubrange(removal, with: entries.isEmpty ? [] : [.entries(entries)])
        }
    }

    /// Makes `index` fall on a segment boundary.
    private func split(at index: Int) {
        lock.withLock {
            var offset = 0
            for (segmentIndex, segment) in segments.enumerated() {
                if index > offset && index < offset + segment.count {
                    let cut = index - offset
                    switch segment {
                    case .entries(let entries):
                        segments.replaceSubrange(segmentIndex...segmentIndex,
                                                 with: [.entries(Array(entries[..<cut])), .entries(Array(entries[cut...]))])
                    case .lazy(let source, let range):
                        segments.replaceSubrange(segmentIndex...segmentIndex, with: [
                            .lazy(source, range.lowerBound..<(range.lowerBound + cut)),
                            .lazy(source, (range.lowerBound + cut)..<range.upperBound)])
                    }
                    return
                }
                offset += segment.count
            }
        }
    }
}

extension MusicPlayer.Queue.Entry {
    /// The duration of the entry's song or music video, when known.
    package var itemDuration: TimeInterval? {
        switch item {
        case .song(let song)?: song.duration
        case .musicVideo(let video)?: video.duration
        case nil: nil
        }
    }
}
