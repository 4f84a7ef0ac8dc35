import PlatformSupport
@testable import AudioEngine
import Foundation
import XCTest

/// The lock-free SPSC ring. Run these under ThreadSanitizer too:
/// `swift test --sanitize=thread --filter RingBufferTests` (scripts/test does).
final class RingBufferTests: XCTestCase {
    func testPushFailsWhenFullAndPopReturnsNilWhenEmpty() {
        let handles = RingBuffer<Int>.make(capacity: 2)
        var producer = handles.producer
        var consumer = handles.consumer
        XCTAssertNil(consumer.pop())
        XCTAssertNil(consumer.peek())
        XCTAssertTrue(producer.push(1))
        XCTAssertTrue(producer.push(2))
        XCTAssertFalse(producer.push(3), "a full ring refuses the element")
        XCTAssertEqual(consumer.peek(), 1)
        XCTAssertEqual(consumer.pop(), 1)
        XCTAssertTrue(producer.push(3))
        XCTAssertEqual(consumer.pop(), 2)
        XCTAssertEqual(consumer.pop(), 3)
        XCTAssertNil(consumer.pop())
        XCTAssertEqual(producer.totalWritten, 3)
        XCTAssertEqual(consumer.totalRead, 3)
    }

    func testOrderedItemsThroughCapacityThreeAcrossThreads() {
        let count = 100_000
        let handles = RingBuffer<Int>.make(capacity: 3)
        let producerBox = Handoff(handles.producer)
        var consumer = handles.consumer
        let producerThread = PlatformThread(name: "test-producer") {
            var producer = producerBox.take()
            var next = 0
            while next < count {
                if producer.push(next) { next += 1 }
            }
        }
        var expected = 0
        var outOfOrder = 0
        while expected < count {
            if let value = consumer.pop() {
                if value != expected { outOfOrder += 1 }
                expected += 1
            }
        }
        producerThread.join()
        XCTAssertEqual(outOfOrder, 0)
        XCTAssertNil(consumer.pop())
    }

    func testOrderedChunksThroughLargeCapacityAcrossThreads() {
        let total = 2_000_000
        let handles = RingBuffer<Float>.make(capacity: 4_096)
        let producerBox = Handoff(handles.producer)
        var consumer = handles.consumer
        let producerThread = PlatformThread(name: "test-producer") {
            var producer = producerBox.take()
            var next = 0
            var generator = SystemRandomNumberGenerator()
            while next < total {
                let wanted = min(Int.random(in: 1...700, using: &generator), total - next)
                let (first, second) = producer.writableSegments(maximumCount: wanted)
                for index in 0..<first.count { first[index] = Float(next + index) }
                for index in 0..<second.count { second[index] = Float(next + first.count + index) }
                producer.commitWrite(count: first.count + second.count)
                next += first.count + second.count
            }
        }
        var expected = 0
        var mismatches = 0
        while expected < total {
            let (first, second) = consumer.readableSegments(maximumCount: Int.random(in: 1...900))
            for value in first {
                if value != Float(expected) { mismatches += 1 }
                expected += 1
            }
            for value in second {
                if value != Float(expected) { mismatches += 1 }
                expected += 1
            }
            consumer.commitRead(count: first.count + second.count)
        }
        producerThread.join()
        XCTAssertEqual(mismatches, 0)
        XCTAssertEqual(consumer.totalRead, total)
    }

    func testChunksWrapAroundAtEveryOffset() {
        for capacity in 1...17 {
            for offset in 0..<capacity {
                let handles = RingBuffer<Int32>.make(capacity: capacity)
                var producer = handles.producer
                var consumer = handles.consumer
                // Move both indices to `offset`.
                for value in 0..<offset { XCTAssertTrue(producer.push(Int32(value))) }
                XCTAssertEqual(consumer.discard(upTo: offset), offset)

                let (first, second) = producer.writableSegments(maximumCount: capacity)
                XCTAssertEqual(first.count, capacity - offset, "capacity \(capacity) offset \(offset)")
                XCTAssertEqual(second.count, offset, "capacity \(capacity) offset \(offset)")
                for index in 0..<first.count { first[index] = Int32(1_000 + index) }
                for index in 0..<second.count { second[index] = Int32(1_000 + first.count + index) }
                producer.commitWrite(count: capacity)
                XCTAssertEqual(producer.availableCount(), 0)

                var read = [Int32](repeating: -1, count: capacity)
                let readCount = read.withUnsafeMutableBufferPointer { consumer.read(into: $0) }
                XCTAssertEqual(readCount, capacity)
                XCTAssertEqual(read, (0..<capacity).map { Int32(1_000 + $0) }, "capacity \(capacity) offset \(offset)")
                XCTAssertEqual(consumer.availableCount(), 0)
            }
        }
    }

    func testWriteCopiesOnlyWhatFits() {
        let handles = RingBuffer<Float>.make(capacity: 5)
        var producer = handles.producer
        var consumer = handles.consumer
        let source: [Float] = [1, 2, 3, 4, 5, 6, 7]
        XCTAssertEqual(source.withUnsafeBufferPointer { producer.write(from: $0) }, 5)
        XCTAssertEqual(consumer.discard(upTo: 3), 3)
        XCTAssertEqual(source.withUnsafeBufferPointer { producer.write(from: UnsafeBufferPointer(rebasing: $0[5...])) }, 2)
        var out = [Float](repeating: 0, count: 8)
        XCTAssertEqual(out.withUnsafeMutableBufferPointer { consumer.read(into: $0) }, 4)
        XCTAssertEqual(Array(out.prefix(4)), [4, 5, 6, 7])
    }

    func testElementsLeftInTheRingAreReleasedWithIt() {
        final class Tracked {
            static let released = NSLock()
            nonisolated(unsafe) static var count = 0
            deinit {
                Tracked.released.lock()
                Tracked.count += 1
                Tracked.released.unlock()
            }
        }
        Tracked.count = 0
        do {
            let handles = RingBuffer<Tracked>.make(capacity: 4)
            var producer = handles.producer
            var consumer = handles.consumer
            for _ in 0..<4 { XCTAssertTrue(producer.push(Tracked())) }
            XCTAssertNotNil(consumer.pop())
        }
        XCTAssertEqual(Tracked.count, 4, "the popped element and the three left in the ring are released")
    }
}
