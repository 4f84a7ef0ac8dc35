import Foundation

extension ApplicationMusicPlayer.Queue {
    /// A queue's entries: a random-access, mutable, range-replaceable collection with Apple's
    /// shape (`Int` indices, `ArraySlice` slices).
    ///
    /// It shares the queue's storage until it is changed (copy on write), and keeps the
    /// queue's laziness: `count` and `entries[i]` load at most the page of `i`; iterating,
    /// comparing, hashing and slicing up to the end load what they cover.
    public struct Entries: RandomAccessCollection, MutableCollection, RangeReplaceableCollection, ExpressibleByArrayLiteral,
        Hashable, @unchecked Sendable {
        // @unchecked: the storage is a locked class, copied before any change when shared.
        public typealias Element = MusicPlayer.Queue.Entry
        public typealias Index = Array<MusicPlayer.Queue.Entry>.Index
        public typealias Indices = Array<MusicPlayer.Queue.Entry>.Indices
        public typealias SubSequence = Array<MusicPlayer.Queue.Entry>.SubSequence
        public typealias Iterator = Array<MusicPlayer.Queue.Entry>.Iterator
        public typealias ArrayLiteralElement = MusicPlayer.Queue.Entry

        var storage: QueueContents

        init(storage: QueueContents) {
            self.storage = storage
        }

        public init() {
            storage = QueueContents()
        }

        public init(arrayLiteral elements: MusicPlayer.Queue.Entry...) {
            storage = QueueContents(entries: elements.map { $0.owned() })
        }

        public var startIndex: Index { 0 }
        public var endIndex: Index { storage.count }
        public var indices: Indices { startIndex..<endIndex }

        public func index(after i: Index) -> Index { i + 1 }
        public func index(before i: Index) -> Index { i - 1 }
        public func formIndex(after i: inout Index) { i += 1 }
        public func formIndex(before i: inout Index) { i -= 1 }
        public func index(_ i: Index, offsetBy distance: Int) -> Index { i + distance }
        public func index(_ i: Index, offsetBy distance: Int, limitedBy limit: Index) -> Index? {
            let target = i + distance
            if distance >= 0 ? (limit >= i && target > limit) : (limit <= i && target < limit) { return nil }
            return target
        }
        public func distance(from start: Index, to end: Index) -> Int { end - start }

        public subscript(position: Index) -> Element {
            get {
                guard let entry = storage.entry(at: position) else {
                    preconditionFailure("queue entry index \(position) out of range 0..<\(storage.count)")
                }
                return entry
            }
            set { replaceSubrange(position..<(position + 1), with: CollectionOfOne(newValue)) }
        }

        /// A slice with this collection's indices (it holds the entries from the start up to
        /// `bounds.upperBound`, the way an `Array`'s slice does).
        public subscript(bounds: Range<Index>) -> SubSequence {
            get { Array(storage.entries(in: 0..<bounds.upperBound))[bounds] }
            set { replaceSubrange(bounds, with: newValue) }
        }

        public func makeIterator() -> Iterator {
            storage.entries(in: 0..<storage.count).makeIterator()
        }

        /// Replaces entries; new ones made with `Entry(_:startTime:endTime:)` become the queue's
        /// own (not transient, with a new `id`).
        public mutating func replaceSubrange<C: Collection>(_ subrange: Range<Index>, with newElements: C)
            where C.Element == MusicPlayer.Queue.Entry {
            if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
            storage.replaceSubrange(subrange, with: newElements.map { $0.owned() })
        }

        public static func == (left: Entries, right: Entries) -> Bool {
            left.storage === right.storage || left.elementsEqual(right)
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(count)
            for entry in self { hasher.combine(entry) }
        }
    }
}
