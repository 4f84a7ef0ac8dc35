/// A point on the output timeline where what is heard changes.
struct TimelineSegment {
    /// The same four kinds as the markers in the ring: what a marker says there, a segment says
    /// on the output timeline.
    typealias Kind = SegmentMarker.Kind

    var kind: Kind
    /// Frame of the output timeline (frames written to the device since the stream opened,
    /// minus frames dropped unheard) where the segment begins.
    var timelineFrame: Int
    var token: UInt64
    /// The entry's frame (stream rate) at `timelineFrame`.
    var entryFrame: Int
    /// Reached by playing on from the previous segment, not by a skip or seek.
    var isNatural: Bool
}

/// The segments written to the device but not yet heard, and the one being heard.
///
/// A value type without threads or I/O: the audio thread feeds it what it wrote and how far
/// the device has played, and it says which segments became audible. Tests drive it directly.
/// Real-time safety: storage is allocated once in `init`; no method allocates or locks.
struct OutputTimeline: ~Copyable {
    private let storage: UnsafeMutablePointer<TimelineSegment>
    let capacity: Int
    private var first = 0
    private(set) var pendingCount = 0
    /// The segment being heard now, nil before anything was heard.
    private(set) var heard: TimelineSegment?

    init(capacity: Int) {
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
    }

    deinit { storage.deallocate() }

    @inline(__always)
    private func pending(_ offset: Int) -> TimelineSegment {
        storage[(first + offset) % capacity]  // offset < pendingCount <= capacity
    }

    /// Records a segment written at `segment.timelineFrame` (not yet heard). A pending
    /// segment at the same frame had no audible frames and is replaced (a failure is kept, to
    /// be announced). When the timeline is full the oldest pending segment is dropped.
    mutating func append(_ segment: TimelineSegment) {
        while pendingCount > 0 {
            let last = pending(pendingCount - 1)
            guard last.timelineFrame == segment.timelineFrame, last.kind != .failed else { break }
            pendingCount -= 1
        }
        if pendingCount == capacity {
            first = (first + 1) % capacity
            pendingCount -= 1
        }
        storage[(first + pendingCount) % capacity] = segment
        pendingCount += 1
    }

    /// Makes the next pending segment at or before `played` heard and returns it with the
    /// segment heard before it; nil when nothing more was heard by `played`.
    mutating func popHeard(atPlayed played: Int) -> (segment: TimelineSegment, previous: TimelineSegment?)? {
        guard pendingCount > 0 else { return nil }
        let next = pending(0)
        guard next.timelineFrame <= played else { return nil }
        first = (first + 1) % capacity
        pendingCount -= 1
        let previous = heard
        // A failed entry is not heard, but one that failed midway ends what was heard of it.
        if next.kind != .failed || heard?.token == next.token { heard = next }
        return (next, previous)
    }

    /// After the device dropped what it held at `played`: forgets pending segments that will
    /// never be heard. With `replayStart`, the frames from there on are written again starting
    /// at `played`, so the segments among them move back by `replayStart - played`.
    mutating func rewind(toPlayed played: Int, replayingFrom replayStart: Int?) {
        // Compacts in place: the segment read at `offset` is appended at or before it.
        let total = pendingCount
        pendingCount = 0
        for offset in 0..<total {
            var segment = pending(offset)
            if let replayStart, segment.timelineFrame >= replayStart {
                if replayStart > played && segment.timelineFrame == replayStart {
                    segment.isNatural = false  // reached by a jump, not by playing on
                }
                segment.timelineFrame -= replayStart - played
            } else if segment.timelineFrame > played {
                continue
            }
            append(segment)
        }
    }

    /// Where the next pending segment begins (the next change to announce), nil when none is.
    var nextPendingFrame: Int? { pendingCount > 0 ? pending(0).timelineFrame : nil }

    /// The timeline frame of the first entry start written after `played` (not heard yet).
    func firstEntryStart(after played: Int) -> Int? {
        for offset in 0..<pendingCount where pending(offset).kind == .entryStart && pending(offset).timelineFrame > played {
            return pending(offset).timelineFrame
        }
        return nil
    }

    /// The segment at the output position `played`: the last one starting at or before it,
    /// announced or not (before the device starts, nothing is announced yet).
    func current(atPlayed played: Int) -> TimelineSegment? {
        var result = heard
        for offset in 0..<pendingCount {
            let segment = pending(offset)
            if segment.timelineFrame > played { break }
            if segment.kind != .failed { result = segment }
        }
        return result
    }

    /// The entry at the output position and its frame there.
    func position(atPlayed played: Int) -> (token: UInt64?, frame: Int) {
        guard let current = current(atPlayed: played),
              current.kind == .entryStart || current.kind == .continuation else { return (nil, 0) }
        return (current.token, current.entryFrame + max(0, played - current.timelineFrame))
    }
}
