import Foundation
import Synchronization

/// What the control thread tells the decoder thread (not real-time: a mutex is fine here).
final class DecoderControl: Sendable {
    private struct Flags {
        var stop = false
        var queueChanged = false
        var crossfadeSeconds: Double
    }
    private let flags: Mutex<Flags>

    init(crossfadeSeconds: Double) {
        flags = Mutex(Flags(crossfadeSeconds: crossfadeSeconds))
    }

    func requestStop() { flags.withLock { $0.stop = true } }
    var isStopRequested: Bool { flags.withLock { $0.stop } }
    func noteQueueChanged() { flags.withLock { $0.queueChanged = true } }
    func setCrossfade(seconds: Double) { flags.withLock { $0.crossfadeSeconds = max(0, seconds) } }

    func take() -> (stop: Bool, queueChanged: Bool, crossfadeSeconds: Double) {
        flags.withLock { flags in
            defer { flags.queueChanged = false }
            return (flags.stop, flags.queueChanged, flags.crossfadeSeconds)
        }
    }
}

/// What the decoder thread reports to the engine (delivered on the decoder thread).
enum SessionEvent: Sendable {
    case primed
    case engine(AudioEngineEvent)
}

/// The decoder thread: decodes the queue into the ring ahead of the audio thread, keeps the
/// next entry's first frames in a preroll slot, answers the audio thread's requests after a
/// skip or seek, and pumps the audio thread's events to the engine.
///
/// Decoding looks for work between chunks (no interruption): each step is one chunk, after
/// which requests and stop are checked; with nothing to do it sleeps until woken. Real-time safety: none needed; this thread does file
/// I/O and allocates. It never blocks the audio thread: all it shares with it are the
/// lock-free queues and the preroll slots' atomic states.
struct DecoderLoop: ~Copyable {
    private var ring: RingBuffer<Float>.Producer
    private var markers: RingBuffer<SegmentMarker>.Producer
    private var requests: RingBuffer<DecoderRequest>.Consumer
    private var audioEvents: RingBuffer<AudioThreadEvent>.Consumer
    private let prerollSlots: [PrerollSlot]
    private let provider: any AudioEntryProvider
    private let wake: WakeSignal
    private let audioWake: WakeSignal
    private let shared: EngineSharedState
    private let control: DecoderControl
    /// Turns the audio thread's failure reports into the output's own error.
    private let device: any AudioOutput
    private let deliver: @Sendable (SessionEvent) -> Void
    private let streamRate: Int
    private let channelCount: Int
    private let chunkFrames: Int
    /// How much of the current entry may still wait in the ring when the decoder moves on to
    /// the next entry. Until then the next entry waits in the preroll slot, so that queue
    /// changes up to the last moments of an entry decide what follows it.
    private let crossingLeadFrames: Int

    /// Frames (stream rate) over which an entry fades into the next one that follows it
    /// naturally; 0 is a gapless cut.
    private var crossfadeFrames = 0
    /// While crossfading is on: the current entry's last decoded samples, held back from the
    /// ring to be mixed with the next entry's first ones. `holdbackStart` is the first unwritten.
    private var holdback: [Float] = []
    private var holdbackStart = 0

    private var epoch: UInt32 = 0
    private var current: EntryDecoder?
    /// The most recent entry started; the next one is `provider.entry(after:)` it.
    private var lastToken: UInt64?
    private var endOfQueueWritten = false

    private struct Preroll {
        var slot: Int
        var decoder: EntryDecoder
        /// Entries between the current one and the prerolled one that could not be opened.
        var skippedFailures: [(AudioEntry.Token, DecoderError)]
    }
    private var preroll: Preroll?
    /// The audio thread took the preroll slot; its request is on the way.
    private var prerollTakenByAudio = false
    /// Nothing follows the current entry (until the queue changes or a request moves us).
    private var nothingToPreroll = false
    /// Why entries failed, until the audio thread announces it (heard order).
    private var failures: [UInt64: DecoderError] = [:]
    /// Set by a step that found the ring too full: the room (samples) to sleep for.
    private var roomWanted: Int?
    /// The room a full ring is refilled from: half of it, so that the decoder works seconds of
    /// audio at a time and sleeps in between.
    private var refillRoom: Int { ring.capacity / 2 }

    init(ring: consuming RingBuffer<Float>.Producer,
         markers: consuming RingBuffer<SegmentMarker>.Producer,
         requests: consuming RingBuffer<DecoderRequest>.Consumer,
         audioEvents: consuming RingBuffer<AudioThreadEvent>.Consumer,
         prerollSlots: [PrerollSlot], provider: any AudioEntryProvider,
         wake: WakeSignal, audioWake: WakeSignal, shared: EngineSharedState,
         control: DecoderControl, device: any AudioOutput, streamRate: Int, channelCount: Int,
         chunkFrames: Int, crossingLeadFrames: Int, first: EntryDecoder, firstEntryFrame: Int,
         deliver: @escaping @Sendable (SessionEvent) -> Void) {
        self.ring = ring
        self.markers = markers
        self.requests = requests
        self.audioEvents = audioEvents
        self.prerollSlots = prerollSlots
        self.provider = provider
        self.wake = wake
        self.audioWake = audioWake
        self.shared = shared
        self.control = control
        self.device = device
        self.streamRate = streamRate
        self.channelCount = channelCount
        self.chunkFrames = chunkFrames
        self.crossingLeadFrames = crossingLeadFrames
        self.deliver = deliver
        start(first, kind: .entryStart, entryFrame: firstEntryFrame, isNatural: false)
    }

    mutating func run() {
        while true {
            let flags = control.take()
            if flags.stop { break }
            crossfadeFrames = flags.crossfadeSeconds.frames(at: streamRate)
            if flags.queueChanged {
                _ = retractPreroll()
                nothingToPreroll = false
            }
            pumpAudioEvents()
            while let request = requests.pop() {
                shared.decoderRequestsTaken.add(1, ordering: .relaxed)
                handle(request)
            }
            roomWanted = nil
            if decodeIntoRing() || fillPreroll() { continue }
            sleepUntilWoken()
        }
    }

    /// Sleeps until something is to be done: a request, a control change, an event of the audio
    /// thread, or, when it waits for room in the ring (`roomWanted`), the audio thread having
    /// read that far (it checks on each of its turns). No timeout: a decoder with nothing to do
    /// does not wake (a paused player, a full ring: 8.9 s of audio decoded ahead).
    private mutating func sleepUntilWoken() {
        if let roomWanted {
            let unreadAtMost = ring.capacity - roomWanted
            shared.decoderWaitsForUnreadAtMost.store(unreadAtMost, ordering: .relaxed)
            // Pairs with the audio thread's fence: either it sees the threshold, or this sees its reads.
            atomicMemoryFence(ordering: .sequentiallyConsistent)
            if ring.capacity - ring.availableCount() <= unreadAtMost {
                shared.decoderWaitsForUnreadAtMost.store(-1, ordering: .relaxed)
                return
            }
        }
        wake.wait(timeoutMilliseconds: -1)
        shared.decoderWaitsForUnreadAtMost.store(-1, ordering: .relaxed)
    }

    // MARK: - Events

    private mutating func pumpAudioEvents() {
        while let event = audioEvents.pop() {
            switch event {
            case .primed: deliver(.primed)
            case .entryStarted(let token, let frame):
                deliver(.engine(.entryStarted(.init(rawValue: token), streamFrame: frame)))
            case .entryCued(let token):
                deliver(.engine(.entryCued(.init(rawValue: token))))
            case .entryFinished(let token):
                deliver(.engine(.entryFinished(.init(rawValue: token))))
            case .entryFailed(let token):
                if let error = failures.removeValue(forKey: token) {
                    deliver(.engine(.entryFailed(.init(rawValue: token), error)))
                }
            case .underrun(let total): deliver(.engine(.underrun(total: total)))
            case .xrun(let total): deliver(.engine(.xrun(total: total)))
            case .queueFinished: deliver(.engine(.queueFinished))
            case .deviceFailed(let code, let operation):
                deliver(.engine(.deviceFailed(device.failure(operation, code: code))))
            }
        }
    }

    // MARK: - Requests from the audio thread

    private mutating func handle(_ request: DecoderRequest) {
        switch request {
        case .continueAfterPreroll(let slot, let newEpoch):
            epoch = newEpoch
            holdback.removeAll(keepingCapacity: true)  // the skipped entry's end is not heard
            holdbackStart = 0
            prerollTakenByAudio = false
            endOfQueueWritten = false
            nothingToPreroll = false
            guard let taken = preroll, taken.slot == slot else {
                // Cannot happen: the slot was published by this thread. Recover by moving on.
                advance(isNatural: false)
                return
            }
            preroll = nil
            // Entries skipped on the way were never heard: report them now.
            for (token, error) in taken.skippedFailures { deliver(.engine(.entryFailed(token, error))) }
            let continuesAt = prerollSlots[slot].entryFrame + prerollSlots[slot].frameCount
            start(taken.decoder, kind: .continuation, entryFrame: continuesAt, isNatural: false)
        case .next(let token, let newEpoch):
            resetForRequest(epoch: newEpoch)
            lastToken = token
            advance(isNatural: false)
        case .previous(let token, let newEpoch):
            resetForRequest(epoch: newEpoch)
            let target = provider.entry(before: AudioEntry.Token(rawValue: token)) ?? entry(withToken: token)
            if let target {
                lastToken = provider.entry(before: target.token)?.token.rawValue
                open(target, isNatural: false)
            } else {
                lastToken = token
                advance(isNatural: false)
            }
        case .reposition(let token, let frame, let newEpoch):
            let reusable = current?.token == token ? current : nil
            resetForRequest(epoch: newEpoch)
            do {
                let decoder: EntryDecoder
                if let reusable {
                    decoder = reusable
                } else if let target = entry(withToken: token) {
                    decoder = try EntryDecoder(entry: target, streamRate: streamRate,
                                               streamChannels: channelCount, chunkFrames: chunkFrames)
                } else {
                    lastToken = token
                    advance(isNatural: false)
                    return
                }
                try decoder.seek(toEntryFrame: frame)
                start(decoder, kind: .continuation, entryFrame: frame, isNatural: false)
            } catch where error.reason == .abandoned {
                return  // another request came meanwhile: it decides what follows
            } catch {
                fail(token: token, error: error, isNatural: false)
                lastToken = token
                advance(isNatural: true)
            }
        }
    }

    private mutating func resetForRequest(epoch newEpoch: UInt32) {
        epoch = newEpoch
        current = nil
        holdback.removeAll(keepingCapacity: true)
        holdbackStart = 0
        _ = retractPreroll()
        endOfQueueWritten = false
        nothingToPreroll = false
    }

    /// The entry with `token`, found through the provider.
    private func entry(withToken token: UInt64) -> AudioEntry? {
        provider.entry(withToken: AudioEntry.Token(rawValue: token))
    }

    // MARK: - Moving through the queue

    /// Starts `decoder` as the current entry: its marker goes into the ring before its frames.
    private mutating func start(_ decoder: EntryDecoder, kind: SegmentMarker.Kind, entryFrame: Int, isNatural: Bool) {
        current = decoder
        lastToken = decoder.token
        endOfQueueWritten = false
        pushMarker(SegmentMarker(kind: kind, ringFrame: ring.totalWritten / channelCount, token: decoder.token,
                                 entryFrame: entryFrame, epoch: epoch, isNatural: isNatural))
    }

    /// Moves on from `lastToken` to the next entry that opens (the preroll when it holds it).
    private mutating func advance(isNatural: Bool) {
        current = nil
        if let held = preroll {
            guard retractPreroll() else { return }  // the audio thread took it; its request follows
            for (token, error) in held.skippedFailures {
                fail(token: token.rawValue, error: error, isNatural: isNatural)
            }
            // The preroll's frames come first, then whatever was decoded beyond them.
            let slot = prerollSlots[held.slot]
            held.decoder.carry = Array(UnsafeBufferPointer(start: slot.samples, count: slot.frameCount * channelCount))
                + held.decoder.carry
            if slot.entryFrame == 0 { mixHoldback(into: held.decoder) }
            start(held.decoder, kind: .entryStart, entryFrame: slot.entryFrame, isNatural: isNatural)
            return
        }
        var run = EntryRun(provider)  // a repeating queue with nothing playable ends
        while run.mayTry(), let next = provider.entry(after: lastToken.map { AudioEntry.Token(rawValue: $0) }) {
            if open(next, isNatural: isNatural) { return }
        }
        // Nothing follows: what was held back for a crossfade plays as it is.
        flushHoldback(keepingFrames: 0, waiting: true)
        endOfQueueWritten = true
        pushMarker(SegmentMarker(kind: .endOfQueue, ringFrame: ring.totalWritten / channelCount,
                                 token: lastToken ?? 0, entryFrame: 0, epoch: epoch, isNatural: isNatural))
    }

    /// Opens `entry` and starts it; on failure records it (so the failure is announced when
    /// heard) and returns false.
    @discardableResult
    private mutating func open(_ entry: AudioEntry, isNatural: Bool) -> Bool {
        do {
            let decoder = try EntryDecoder(entry: entry, streamRate: streamRate,
                                           streamChannels: channelCount, chunkFrames: chunkFrames)
            mixHoldback(into: decoder)
            start(decoder, kind: .entryStart, entryFrame: 0, isNatural: isNatural)
            return true
        } catch where error.reason == .abandoned {
            return true  // a request came while it waited for the download: that request decides
        } catch {
            fail(token: entry.token.rawValue, error: error, isNatural: isNatural)
            lastToken = entry.token.rawValue
            return false
        }
    }

    private mutating func fail(token: UInt64, error: DecoderError, isNatural: Bool) {
        failures[token] = error
        pushMarker(SegmentMarker(kind: .failed, ringFrame: ring.totalWritten / channelCount, token: token,
                                 entryFrame: 0, epoch: epoch, isNatural: isNatural))
    }

    private mutating func pushMarker(_ marker: SegmentMarker) {
        // The audio thread reads markers as it plays; if it is paused with a full queue, wait.
        while !markers.push(marker) {
            if control.take().stop { return }
            wake.wait(timeoutMilliseconds: 5)
        }
    }

    /// Takes the preroll slot back. False when the audio thread owns it (it skipped to it).
    private mutating func retractPreroll() -> Bool {
        guard let held = preroll else { return true }
        let slot = prerollSlots[held.slot]
        if slot.state.compareExchange(expected: PrerollSlot.ready, desired: PrerollSlot.empty,
                                      ordering: .acquiringAndReleasing).exchanged {
            preroll = nil
            return true
        }
        prerollTakenByAudio = true
        return false
    }

    // MARK: - Decoding

    /// Decodes one chunk of the current entry into the ring. False when there was nothing to do.
    private mutating func decodeIntoRing() -> Bool {
        guard let decoder = current else {
            if endOfQueueWritten || prerollTakenByAudio { return false }
            advance(isNatural: true)
            return true
        }
        if holdbackStart < holdback.count {
            // Crossfading (or was): write what is older than the last crossfadeFrames.
            let before = holdbackStart
            flushHoldback(keepingFrames: crossfadeFrames, waiting: false)
            let excess = holdback.count - holdbackStart - crossfadeFrames * channelCount
            if excess > 0 {
                // The ring is full: wait for room.
                if holdbackStart == before { roomWanted = refillRoom }
                return holdbackStart != before
            }
        }
        if decoder.isFinished && decoder.carry.isEmpty {
            // Move on only when little of this entry is left to hear (see crossingLeadFrames).
            let unreadFrames = (ring.capacity - ring.availableCount()) / channelCount
            if unreadFrames > crossingLeadFrames {
                roomWanted = ring.capacity - crossingLeadFrames * channelCount
                return false
            }
            advance(isNatural: true)
            return true
        }
        if !decoder.carry.isEmpty {
            if crossfadeFrames > 0 {
                holdback.append(contentsOf: decoder.carry)
                decoder.carry.removeAll()
                return true
            }
            let written = decoder.carry.withUnsafeBufferPointer { ring.write(from: $0) }
            if written == 0 {
                roomWanted = refillRoom
                return false
            }
            decoder.carry.removeFirst(written)
            wakeAudioIfWaiting()
            return true
        }
        guard ring.availableCount() >= decoder.maximumChunkSamples else {
            roomWanted = max(refillRoom, decoder.maximumChunkSamples)
            return false
        }
        do {
            let samples = try decoder.nextChunk()
            if samples.isEmpty { return true }  // finished: the check above moves on in time
            if crossfadeFrames > 0 {
                holdback.append(contentsOf: samples)
                return true
            }
            let written = ring.write(from: samples)
            precondition(written == samples.count, "the ring had room for a whole chunk")
            wakeAudioIfWaiting()
        } catch where error.reason == .abandoned {
            // A request came while this read waited for the download: the entry is left as it
            // is (a seek within it opens it again), and the request decides what follows.
            current = nil
        } catch {
            // Broken or cut short: what was decoded plays, then the queue moves on.
            fail(token: decoder.token, error: error, isNatural: true)
            advance(isNatural: true)
        }
        return true
    }

    // MARK: - Crossfade

    /// Writes the held-back samples to the ring except the last `keepingFrames`; with
    /// `waiting`, waits for room until they are all written (or the thread is stopped).
    private mutating func flushHoldback(keepingFrames: Int, waiting: Bool) {
        while holdbackStart < holdback.count - keepingFrames * channelCount {
            let end = holdback.count - keepingFrames * channelCount
            let written = holdback.withUnsafeBufferPointer { all in
                ring.write(from: UnsafeBufferPointer(rebasing: all[holdbackStart..<end]))
            }
            holdbackStart += written
            if written > 0 { wakeAudioIfWaiting() }
            if written == 0 {
                guard waiting, !control.take().stop else { break }
                wake.wait(timeoutMilliseconds: 5)
            }
        }
        if holdbackStart == holdback.count {
            holdback.removeAll(keepingCapacity: true)
            holdbackStart = 0
        } else if holdbackStart > 1 << 16 {
            holdback.removeFirst(holdbackStart)
            holdbackStart = 0
        }
    }

    /// Starts `next` over the held-back end of the entry before it: the two overlap for as many
    /// frames as were held back, the old one fading out and the new one in (equal power).
    private mutating func mixHoldback(into next: EntryDecoder) {
        let tail = Array(holdback[holdbackStart...])
        holdback.removeAll(keepingCapacity: true)
        holdbackStart = 0
        guard !tail.isEmpty else { return }
        // The next entry's first frames, as many as the tail has.
        var head = next.carry
        next.carry = []
        while head.count < tail.count && !next.isFinished {
            guard let chunk = try? next.nextChunk() else { break }
            head.append(contentsOf: chunk)
        }
        let overlap = min(tail.count, head.count) / channelCount
        var mixed = [Float](repeating: 0, count: max(tail.count, overlap * channelCount))
        for frame in 0..<(tail.count / channelCount) {
            let progress = overlap > 0 ? Float(frame) / Float(overlap) : 1
            let fadeOut = frame < overlap ? cos(progress * .pi / 2) : 1
            let fadeIn = frame < overlap ? sin(progress * .pi / 2) : 0
            for channel in 0..<channelCount {
                let index = frame * channelCount + channel
                mixed[index] = tail[index] * fadeOut + (frame < overlap ? head[index] * fadeIn : 0)
            }
        }
        next.carry = mixed + head.dropFirst(overlap * channelCount)
    }

    private func wakeAudioIfWaiting() {
        if shared.audioWantsData.load(ordering: .relaxed) { audioWake.signal() }
    }

    /// Decodes the first frames of the entry after the current one into a free preroll slot.
    private mutating func fillPreroll() -> Bool {
        guard preroll == nil, !nothingToPreroll, !prerollTakenByAudio, let current else { return false }
        guard let slotIndex = prerollSlots.indices.first(where: {
            prerollSlots[$0].state.load(ordering: .acquiring) == PrerollSlot.empty
        }) else { return false }
        var skipped: [(AudioEntry.Token, DecoderError)] = []
        var after = AudioEntry.Token(rawValue: current.token)
        var run = EntryRun(provider)
        while run.mayTry(), let next = provider.entry(after: after) {
            do {
                let decoder = try EntryDecoder(entry: next, streamRate: streamRate,
                                               streamChannels: channelCount, chunkFrames: chunkFrames)
                let slot = prerollSlots[slotIndex]
                var framesInSlot = 0
                while framesInSlot < slot.capacityInFrames && !decoder.isFinished {
                    let samples = try decoder.nextChunk()
                    let fitting = min(samples.count, (slot.capacityInFrames - framesInSlot) * channelCount)
                    if fitting > 0 {
                        (slot.samples + framesInSlot * channelCount).update(from: samples.baseAddress!, count: fitting)
                    }
                    if fitting < samples.count { decoder.carry.append(contentsOf: samples[fitting...]) }
                    framesInSlot += fitting / channelCount
                }
                slot.frameCount = framesInSlot
                slot.token = decoder.token
                slot.entryFrame = 0
                slot.state.store(PrerollSlot.ready, ordering: .releasing)
                preroll = Preroll(slot: slotIndex, decoder: decoder, skippedFailures: skipped)
                return true
            } catch where error.reason == .abandoned {
                return false  // the slot was not published; the request that came decides
            } catch {
                skipped.append((next.token, error))
                after = next.token
            }
        }
        // Nothing playable follows; advance() reports the failures when it gets there.
        nothingToPreroll = true
        return false
    }
}
