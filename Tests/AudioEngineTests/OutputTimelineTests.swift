@testable import AudioEngine
import XCTest

/// The audio thread's bookkeeping of what was written and what is heard, without threads.
final class OutputTimelineTests: XCTestCase {
    private func segment(_ kind: TimelineSegment.Kind, at frame: Int, token: UInt64, entryFrame: Int = 0,
                         natural: Bool = true) -> TimelineSegment {
        TimelineSegment(kind: kind, timelineFrame: frame, token: token, entryFrame: entryFrame, isNatural: natural)
    }

    private func drain(_ timeline: inout OutputTimeline, played: Int) -> [(UInt64, TimelineSegment.Kind)] {
        var heard: [(UInt64, TimelineSegment.Kind)] = []
        while let (segment, _) = timeline.popHeard(atPlayed: played) { heard.append((segment.token, segment.kind)) }
        return heard
    }

    func testSegmentsBecomeHeardInOrderWhenPlayedReachesThem() {
        var timeline = OutputTimeline(capacity: 8)
        timeline.append(segment(.entryStart, at: 0, token: 1))
        timeline.append(segment(.entryStart, at: 1_000, token: 2))
        timeline.append(segment(.endOfQueue, at: 1_500, token: 2))

        XCTAssertEqual(drain(&timeline, played: 0).map(\.0), [1])
        XCTAssertEqual(timeline.position(atPlayed: 600).token, 1)
        XCTAssertEqual(timeline.position(atPlayed: 600).frame, 600)
        XCTAssertTrue(drain(&timeline, played: 999).isEmpty, "entry 2 is written but not heard before frame 1000")
        XCTAssertEqual(drain(&timeline, played: 1_200).map(\.0), [2])
        XCTAssertEqual(timeline.position(atPlayed: 1_200).frame, 200)
        XCTAssertEqual(drain(&timeline, played: 2_000).map(\.1), [.endOfQueue])
        XCTAssertNil(timeline.position(atPlayed: 2_000).token)
    }

    func testPopHeardReportsTheSegmentHeardBefore() {
        var timeline = OutputTimeline(capacity: 4)
        timeline.append(segment(.entryStart, at: 0, token: 7))
        timeline.append(segment(.entryStart, at: 10, token: 8))
        _ = timeline.popHeard(atPlayed: 5)
        let next = timeline.popHeard(atPlayed: 10)
        XCTAssertEqual(next?.segment.token, 8)
        XCTAssertEqual(next?.previous?.token, 7)
    }

    func testRewindForgetsWhatWasNeverHeard() {
        var timeline = OutputTimeline(capacity: 8)
        timeline.append(segment(.entryStart, at: 0, token: 1))
        timeline.append(segment(.entryStart, at: 800, token: 2))
        _ = drain(&timeline, played: 300)
        timeline.rewind(toPlayed: 300, replayingFrom: nil)
        XCTAssertNil(timeline.firstEntryStart(after: 300))
        XCTAssertTrue(drain(&timeline, played: 10_000).isEmpty)
        XCTAssertEqual(timeline.heard?.token, 1)
    }

    func testRewindWithReplayMovesTheReplayedSegmentsBack() {
        var timeline = OutputTimeline(capacity: 8)
        timeline.append(segment(.entryStart, at: 0, token: 1))
        timeline.append(segment(.continuation, at: 400, token: 1, entryFrame: 400))
        timeline.append(segment(.entryStart, at: 800, token: 2))
        timeline.append(segment(.entryStart, at: 900, token: 3))
        _ = drain(&timeline, played: 300)
        XCTAssertEqual(timeline.firstEntryStart(after: 300), 800)
        // Skip: the device dropped at 300; frames from 800 on are written again from 300.
        timeline.rewind(toPlayed: 300, replayingFrom: 800)
        XCTAssertEqual(timeline.pendingCount, 2, "the continuation at 400 is skipped over")
        XCTAssertEqual(timeline.firstEntryStart(after: 300), 400, "entry 3 comes next, moved from 900 to 400")
        XCTAssertEqual(timeline.current(atPlayed: 300)?.token, 2)
        XCTAssertEqual(timeline.current(atPlayed: 300)?.isNatural, false, "reached by a skip")
        XCTAssertEqual(drain(&timeline, played: 300).map(\.0), [2])
        XCTAssertEqual(drain(&timeline, played: 400).map(\.0), [3], "entry 3 moved from 900 to 400")
    }

    func testAFailedEntryIsAnnouncedButNotHeard() {
        var timeline = OutputTimeline(capacity: 8)
        timeline.append(segment(.entryStart, at: 0, token: 1))
        timeline.append(segment(.failed, at: 100, token: 2))
        timeline.append(segment(.entryStart, at: 100, token: 3))
        XCTAssertEqual(drain(&timeline, played: 50).map(\.0), [1])
        let heard = drain(&timeline, played: 100)
        XCTAssertEqual(heard.map(\.0), [2, 3])
        XCTAssertEqual(heard.map(\.1), [.failed, .entryStart])
        XCTAssertEqual(timeline.position(atPlayed: 150).token, 3)
    }

    func testASegmentWithoutAudibleFramesIsReplacedByTheNextAtTheSameFrame() {
        var timeline = OutputTimeline(capacity: 8)
        timeline.append(segment(.entryStart, at: 0, token: 1))
        timeline.append(segment(.failed, at: 0, token: 2))
        timeline.append(segment(.entryStart, at: 0, token: 3, natural: false))
        XCTAssertEqual(timeline.pendingCount, 2, "entry 1 had no frames before entry 3; the failure stays")
        XCTAssertEqual(timeline.current(atPlayed: 0)?.token, 3)
        XCTAssertEqual(drain(&timeline, played: 0).map(\.0), [2, 3])
    }

    func testCurrentIncludesSegmentsNotYetAnnounced() {
        var timeline = OutputTimeline(capacity: 8)
        XCTAssertNil(timeline.current(atPlayed: 0))
        timeline.append(segment(.entryStart, at: 0, token: 4, entryFrame: 100))
        XCTAssertEqual(timeline.position(atPlayed: 0).token, 4, "prepared: what will be heard first")
        XCTAssertEqual(timeline.position(atPlayed: 0).frame, 100)
        XCTAssertNil(timeline.heard)
    }

    func testAFullTimelineDropsItsOldestPendingSegment() {
        var timeline = OutputTimeline(capacity: 2)
        timeline.append(segment(.entryStart, at: 0, token: 1))
        timeline.append(segment(.entryStart, at: 10, token: 2))
        timeline.append(segment(.entryStart, at: 20, token: 3))
        XCTAssertEqual(timeline.pendingCount, 2)
        XCTAssertEqual(drain(&timeline, played: 100).map(\.0), [2, 3])
    }
}
