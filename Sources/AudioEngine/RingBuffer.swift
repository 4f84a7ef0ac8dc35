import Synchronization

/// A single-producer, single-consumer, lock-free ring buffer of fixed capacity.
///
/// `RingBuffer.make(capacity:)` allocates the storage once and hands out exactly one
/// ``Producer`` and one ``Consumer``. Both are noncopyable, so the single-producer /
/// single-consumer rule is a type rule: each handle can be moved to one thread, never shared.
/// After creation no memory is allocated.
///
/// Indices are monotonically increasing counts of elements written and read; a slot is
/// `index % capacity`. Each side caches the other side's index and reloads it (acquire)
/// only when its cache says the buffer is full (producer) or empty (consumer). The two
/// indices live on separate cache lines.
///
/// Thread safety: one thread may use the producer while another uses the consumer.
/// Real-time safety: every method of both handles is wait-free and never allocates,
/// locks or makes a system call.
public enum RingBuffer<Element> {
    /// The two ends of a new ring buffer; take them apart with
    /// `let producer = handles.producer; let consumer = handles.consumer`
    /// (frozen so that other modules may take the two apart).
    @frozen
    public struct Handles: ~Copyable {
        public let producer: Producer
        public let consumer: Consumer
    }

    /// Allocates a ring buffer holding at most `capacity` elements.
    public static func make(capacity: Int) -> Handles {
        precondition(capacity > 0, "a ring buffer needs a positive capacity")
        let storage = RingStorage<Element>(capacity: capacity)
        return Handles(producer: Producer(storage: storage), consumer: Consumer(storage: storage))
    }

    /// The writing end. Owned by one thread at a time.
    public struct Producer: ~Copyable {
        let storage: RingStorage<Element>
        /// Copies of the storage's constants, so the hot path touches no class reference.
        let elements: UnsafeMutablePointer<Element>
        public let capacity: Int
        /// Elements written so far; only this handle changes `storage.writeIndex`.
        var writeIndex = 0
        /// The consumer's read index as last seen; refreshed only when the buffer looks full.
        var cachedReadIndex = 0

        init(storage: RingStorage<Element>) {
            self.storage = storage
            elements = storage.elements
            capacity = storage.capacity
        }

        /// Free slots, refreshing the cached read index.
        public mutating func availableCount() -> Int {
            cachedReadIndex = storage.readIndex.load(ordering: .acquiring)
            return capacity - (writeIndex - cachedReadIndex)
        }

        /// Total elements ever written.
        public var totalWritten: Int { writeIndex }

        /// Appends one element. Returns false, leaving the buffer unchanged, when it is full.
        public mutating func push(_ element: Element) -> Bool {
            if writeIndex - cachedReadIndex == capacity {
                cachedReadIndex = storage.readIndex.load(ordering: .acquiring)
                if writeIndex - cachedReadIndex == capacity { return false }
            }
            // writeIndex % capacity is in 0 ..< capacity and the slot is free: the consumer
            // has read everything below cachedReadIndex > writeIndex - capacity.
            (elements + writeIndex % capacity).initialize(to: element)
            writeIndex += 1
            storage.writeIndex.store(writeIndex, ordering: .releasing)
            return true
        }
    }

    /// The reading end. Owned by one thread at a time.
    public struct Consumer: ~Copyable {
        let storage: RingStorage<Element>
        /// Copies of the storage's constants, so the hot path touches no class reference.
        let elements: UnsafeMutablePointer<Element>
        public let capacity: Int
        /// Elements read so far; only this handle changes `storage.readIndex`.
        var readIndex = 0
        /// The producer's write index as last seen; refreshed only when the buffer looks empty.
        var cachedWriteIndex = 0

        init(storage: RingStorage<Element>) {
            self.storage = storage
            elements = storage.elements
            capacity = storage.capacity
        }

        /// Elements ready to read, refreshing the cached write index.
        public mutating func availableCount() -> Int {
            cachedWriteIndex = storage.writeIndex.load(ordering: .acquiring)
            return cachedWriteIndex - readIndex
        }

        /// Total elements ever read (or discarded).
        public var totalRead: Int { readIndex }

        /// Removes and returns the oldest element, or nil when the buffer is empty.
        public mutating func pop() -> Element? {
            guard refreshIfEmpty() else { return nil }
            let element = (elements + readIndex % capacity).move()
            readIndex += 1
            storage.readIndex.store(readIndex, ordering: .releasing)
            return element
        }

        /// Returns a copy of the oldest element without removing it, or nil when empty.
        public mutating func peek() -> Element? {
            guard refreshIfEmpty() else { return nil }
            return elements[readIndex % capacity]
        }

        private mutating func refreshIfEmpty() -> Bool {
            if readIndex == cachedWriteIndex {
                cachedWriteIndex = storage.writeIndex.load(ordering: .acquiring)
                if readIndex == cachedWriteIndex { return false }
            }
            return true
        }
    }
}

// The storage is shared by exactly one producer and one consumer; the atomics order it.
extension RingBuffer.Producer: @unchecked Sendable where Element: Sendable {}
extension RingBuffer.Consumer: @unchecked Sendable where Element: Sendable {}

extension RingBuffer.Producer where Element: BitwiseCopyable {
    /// Free slots as at most two contiguous segments (the second is empty unless the free
    /// space wraps), limited to `maximumCount`. Write into them, then call
    /// ``commitWrite(count:)``; nothing is visible to the consumer before the commit.
    public mutating func writableSegments(
        maximumCount: Int
    ) -> (UnsafeMutableBufferPointer<Element>, UnsafeMutableBufferPointer<Element>) {
        var free = capacity - (writeIndex - cachedReadIndex)
        if free < maximumCount { free = availableCount() }
        let count = min(free, maximumCount)
        return RingStorage<Element>.segments(of: elements, capacity: capacity, startingAt: writeIndex, count: count)
    }

    /// Publishes `count` elements written into the segments last handed out.
    public mutating func commitWrite(count: Int) {
        precondition(count >= 0 && writeIndex + count - cachedReadIndex <= capacity,
                     "committed more elements than the ring buffer had free")
        writeIndex += count
        storage.writeIndex.store(writeIndex, ordering: .releasing)
    }

    /// Copies as many elements of `source` as fit; returns how many were written.
    public mutating func write(from source: UnsafeBufferPointer<Element>) -> Int {
        let (first, second) = writableSegments(maximumCount: source.count)
        let firstCount = first.count
        if firstCount > 0 {
            first.baseAddress!.update(from: source.baseAddress!, count: firstCount)
        }
        if second.count > 0 {
            second.baseAddress!.update(from: source.baseAddress! + firstCount, count: second.count)
        }
        let written = firstCount + second.count
        commitWrite(count: written)
        return written
    }
}

extension RingBuffer.Consumer where Element: BitwiseCopyable {
    /// Readable elements as at most two contiguous segments, limited to `maximumCount`.
    /// Read from them, then call ``commitRead(count:)`` to free the slots.
    public mutating func readableSegments(
        maximumCount: Int
    ) -> (UnsafeBufferPointer<Element>, UnsafeBufferPointer<Element>) {
        var ready = cachedWriteIndex - readIndex
        if ready < maximumCount { ready = availableCount() }
        let count = min(ready, maximumCount)
        let (first, second) = RingStorage<Element>.segments(of: elements, capacity: capacity,
                                                            startingAt: readIndex, count: count)
        return (UnsafeBufferPointer(first), UnsafeBufferPointer(second))
    }

    /// Frees `count` elements at the read position (read or skipped).
    public mutating func commitRead(count: Int) {
        precondition(count >= 0 && readIndex + count <= cachedWriteIndex,
                     "committed more elements than the ring buffer held")
        readIndex += count
        storage.readIndex.store(readIndex, ordering: .releasing)
    }

    /// Drops up to `count` elements; returns how many were dropped.
    public mutating func discard(upTo count: Int) -> Int {
        var ready = cachedWriteIndex - readIndex
        if ready < count { ready = availableCount() }
        let dropped = min(ready, count)
        commitRead(count: dropped)
        return dropped
    }

    /// Copies up to `destination.count` elements out; returns how many were read.
    public mutating func read(into destination: UnsafeMutableBufferPointer<Element>) -> Int {
        let (first, second) = readableSegments(maximumCount: destination.count)
        if first.count > 0 {
            destination.baseAddress!.update(from: first.baseAddress!, count: first.count)
        }
        if second.count > 0 {
            (destination.baseAddress! + first.count).update(from: second.baseAddress!, count: second.count)
        }
        let read = first.count + second.count
        commitRead(count: read)
        return read
    }
}

/// 128 bytes: two cache lines, so that adjacent-line prefetching does not pair the indices.
struct CacheLinePadding {
    private var words: (Int, Int, Int, Int, Int, Int, Int, Int,
                        Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0,
                                                                   0, 0, 0, 0, 0, 0, 0, 0)
}

/// The shared part of a ring buffer: the element slots and the two indices, each on its own
/// cache line (Swift lays out a final class's stored properties in declaration order).
final class RingStorage<Element> {
    let capacity: Int
    let elements: UnsafeMutablePointer<Element>
    private let paddingBeforeWriteIndex = CacheLinePadding()
    /// Elements written so far. Stored by the producer (release), loaded by the consumer (acquire).
    let writeIndex = Atomic<Int>(0)
    private let paddingBetweenIndices = CacheLinePadding()
    /// Elements read so far. Stored by the consumer (release), loaded by the producer (acquire).
    let readIndex = Atomic<Int>(0)
    private let paddingAfterReadIndex = CacheLinePadding()

    init(capacity: Int) {
        self.capacity = capacity
        elements = UnsafeMutablePointer<Element>.allocate(capacity: capacity)
    }

    /// Up to two contiguous runs covering `count` slots from absolute index `start`.
    @inline(__always)
    static func segments(of elements: UnsafeMutablePointer<Element>, capacity: Int, startingAt start: Int,
                         count: Int) -> (UnsafeMutableBufferPointer<Element>, UnsafeMutableBufferPointer<Element>) {
        let offset = start % capacity  // in 0 ..< capacity
        let firstCount = min(count, capacity - offset)
        return (UnsafeMutableBufferPointer(start: elements + offset, count: firstCount),
                UnsafeMutableBufferPointer(start: elements, count: count - firstCount))
    }

    deinit {
        // Both handles are gone, so nothing races: deinitialize what was written but not read.
        let read = readIndex.load(ordering: .relaxed)
        let written = writeIndex.load(ordering: .relaxed)
        for index in read..<written {
            (elements + index % capacity).deinitialize(count: 1)
        }
        elements.deallocate()
    }
}
