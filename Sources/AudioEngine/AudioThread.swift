import PlatformSupport
import Glibc
import Synchronization

/// Everything the audio thread owns. Created on the control thread, then moved to the audio
/// thread, which runs `run()` until a `.stop` command.
///
/// Real-time safety: after `init`, nothing here allocates, locks, logs or touches a file. The
/// loop sleeps in `poll` on the PCM's descriptors and an eventfd, writes to the PCM, reads the
/// decoded-frames ring and the marker/command queues, and writes to the event/request queues.
/// The allocation test in `AudioThreadAllocationTests` holds it to that.
struct AudioRenderer: ~Copyable {
    enum Mode: Equatable {
        /// Staging frames for the stopped device; starts it once primed when `autoStart`.
        case filling(autoStart: Bool)
        /// Primed and waiting for `.start`.
        case ready
        case running
        /// Paused in place with `snd_pcm_pause`.
        case paused
        /// The queue's end was decoded: playing out what the device holds.
        case draining
        case finished
        case failed
    }

    // Inputs
    private var ring: RingBuffer<Float>.Consumer
    private var markers: RingBuffer<SegmentMarker>.Consumer
    private var commands: RingBuffer<AudioCommand>.Consumer
    /// The session keeps the slots alive; unmanaged references keep reference counting (and
    /// so any chance of a lock) out of the render step.
    private let prerollSlots: UnsafeMutableBufferPointer<Unmanaged<PrerollSlot>>
    // Outputs
    private var events: RingBuffer<AudioThreadEvent>.Producer
    private var requests: RingBuffer<DecoderRequest>.Producer
    /// Called through its protocol (a witness table, no allocation or lock of its own): a
    /// renderer generic over the output would put the `@_noLocks` render step in a generic
    /// context, where the compiler rejects every call it makes; the render step never calls
    /// the output.
    private let device: any AudioOutput
    /// `device.capabilities`, read once.
    private let devicePausesInPlace: Bool
    private let devicePrepareDiscardsPlayback: Bool
    private let shared: EngineSharedState
    private let wake: WakeSignal
    private let decoderWake: WakeSignal

    private let channelCount: Int
    /// The render period (`AudioEngineConfiguration.periodDuration`): frames are rendered and
    /// staged in whole periods of this; the device's own period (when it wakes the thread) is
    /// much longer.
    private let periodFrames: Int
    /// Frames staged before the device starts: the start buffer less two periods, or the
    /// device's period when that is more, and less than a full buffer, so the device still has
    /// room for a period when it starts (a full buffer played out before the first pointer query
    /// looks to ALSA's pulse plugin like no progress at all). The device's period because that is
    /// the device's start threshold, which ALSA's pulse plugin makes its stream's `prebuf`:
    /// a start that writes less waits at the server for the plugin's trigger, which queues behind
    /// its uncork and two timing requests, each a round trip to the server's I/O thread; one
    /// that writes a period is played as its frames arrive (Benchmarks/RESULTS.md, "The start
    /// regression explained"). A cold start does not wait for it: it writes what is decoded.
    /// The rest of the deep buffer follows once the device runs.
    private let prefillLimitInFrames: Int
    /// While the device holds at least this much, a late decoder is waited for; below it,
    /// silence is written (an underrun) so that the device does not run dry.
    private let underrunFloorInFrames: Int
    /// Frames rendered wait here, in device format, before they go to the device. While it is
    /// stopped, not in the device: an ALSA device starts by itself once a period is written (its
    /// start threshold, which ALSA's pulse plugin makes its stream's `prebuf`), and nothing may
    /// be heard before `play()`; starting writes them in one call and starts the device at once.
    /// While it runs, so that a refill is one write (one packet to a sound server) rather than
    /// one per render period.
    private let staging: UnsafeMutableRawPointer
    private let stagingCapacityInFrames: Int
    private var stagedFrames = 0
    /// The staging scaled by `gain` on its way to the device, when the gain is not 1.
    private let scaledStaging: UnsafeMutableRawPointer
    /// The engine's volume as an amplitude factor (`EngineSharedState.outputGainBits`), applied as
    /// frames leave the staging for the device, so that the staging and the history hold the
    /// frames as decoded and a change can write again what the device holds, at the new gain.
    private var gain: Float = 1
    private var stagingRoomInFrames: Int { stagingCapacityInFrames - stagedFrames }
    /// Dropped and not prepared again yet: `startDevice()` prepares it.
    private var deviceNeedsPrepare = false
    private let bytesPerFrame: Int
    private let format: PCMSampleFormat
    /// Silence keeps a real-time device running when the decoder is late; a device without a
    /// clock (`null`, `file` over `null`) is instead left waiting, for exact offline output.
    private let insertsSilenceOnUnderrun: Bool

    /// One period of decoded samples, then the same in device format.
    private let floatPeriod: UnsafeMutablePointer<Float>
    private let devicePeriod: UnsafeMutableRawPointer
    /// Frames of `devicePeriod` rendered but not yet accepted by the device.
    private var periodPendingOffset = 0
    private var periodPendingCount = 0
    /// Frames of `devicePeriod` rendered and waiting for the rest of the period.
    private var periodRendered = 0

    /// The last frames written, in device format, indexed by timeline frame, so what the
    /// device dropped can be written again (pause without hardware pause, skip back to an
    /// entry start still in the device buffer).
    private let history: UnsafeMutableRawPointer
    private let historyCapacityInFrames: Int
    /// Frames of history to write again before new frames: (timeline frame, count).
    private var replaySource = 0
    private var replayRemaining = 0

    private var timeline: OutputTimeline
    /// Frames written to the device on the timeline.
    private var framesWritten = 0
    /// Timeline frame where the queue ends, once its end marker was read.
    private var endOfQueueFrame: Int?
    /// Where the device is dropped once the queue ended: 100 ms (at most half the buffer) after
    /// the end is heard, since the position is the server's estimate, and PipeWire's pulse
    /// server counts a quantum as played once its graph took it (up to 2,048 frames at its
    /// largest; dropped on time, the last partial quantum of an album, 102 frames, was never
    /// heard, 3 runs of 3). Silence is written past the end for a whole buffer, so nothing runs
    /// dry meanwhile. At the end itself when nothing was written since the device's restart.
    private var endOfQueueDropFrame: Int? {
        guard let end = endOfQueueFrame else { return nil }
        guard framesWritten > timelineFrameAtRestart else { return end }
        return end + min(device.configuration.bufferSizeInFrames / 2, device.configuration.sampleRate / 10)
    }
    /// Timeline frame at the last (re)start of the device: nothing after it is heard before
    /// the device starts, whatever its delay says (a `null` device reports none).
    private var timelineFrameAtRestart = 0

    // Read position in the decoded stream
    private var readToken: UInt64 = 0
    private var readEntryFrame = 0
    private var segmentEpoch: UInt32 = 0
    private var requiredEpoch: UInt32 = 0
    /// The last seek asked for, and the last one whose frames reached the timeline (`apply`);
    /// `service` publishes the latter after the position.
    private var pendingSeekSerial: UInt64 = 0
    private var reachedSeekSerial: UInt64 = 0
    /// The entry last announced at the output while nothing was heard (`entryCued`), and
    /// whether such announcements are due: after a skip or seek made while not playing (not
    /// while a new stream fills before its first start).
    private var cuedToken: UInt64 = 0
    private var announcesCues = false
    private var prerollSlotIndex = -1
    private var prerollOffset = 0

    private(set) var mode: Mode = .filling(autoStart: false)
    private var underruns = 0
    /// Frames of silence written because the decoder was late.
    private var underrunSilenceFrames = 0
    private var inUnderrun = false
    private var xruns = 0
    private var primedAnnounced = false
    /// Set inside the render step, which may not make system calls; signalled after it.
    private var wakeDecoder = false
    private var stopRequested = false
    /// The device's fill when the last refill found nothing decoded and waited for the decoder
    /// instead of padding with silence (0 otherwise).
    private var starvedQueuedFrames = 0
    /// The played position last published.
    private var lastPlayedFrame = 0
    /// A request for the decoder is waiting; signalled after this turn's writes (see skipToNext).
    private var wakeDecoderAfterService = false

    init(ring: consuming RingBuffer<Float>.Consumer,
         markers: consuming RingBuffer<SegmentMarker>.Consumer,
         commands: consuming RingBuffer<AudioCommand>.Consumer,
         events: consuming RingBuffer<AudioThreadEvent>.Producer,
         requests: consuming RingBuffer<DecoderRequest>.Producer,
         prerollSlots: [PrerollSlot], device: any AudioOutput, shared: EngineSharedState,
         wake: WakeSignal, decoderWake: WakeSignal, firstToken: UInt64, insertsSilenceOnUnderrun: Bool,
         periodFrames: Int, startBufferFrames: Int) {
        self.ring = ring
        self.markers = markers
        self.commands = commands
        self.events = events
        self.requests = requests
        self.prerollSlots = .allocate(capacity: prerollSlots.count)
        _ = self.prerollSlots.initialize(from: prerollSlots.map { Unmanaged.passUnretained($0) })
        self.device = device
        devicePausesInPlace = device.capabilities.contains(.pause)
        devicePrepareDiscardsPlayback = device.capabilities.contains(.prepareDiscardsPlayback)
        self.shared = shared
        self.wake = wake
        self.decoderWake = decoderWake
        readToken = firstToken
        self.insertsSilenceOnUnderrun = insertsSilenceOnUnderrun
        let configuration = device.configuration
        channelCount = configuration.channelCount
        self.periodFrames = periodFrames
        let startBuffer = min(startBufferFrames, configuration.bufferSizeInFrames)
        let outputPeriod = (configuration.periodSizeInFrames + periodFrames - 1) / periodFrames * periodFrames
        prefillLimitInFrames = max(periodFrames, startBuffer - 2 * periodFrames,
                                   min(outputPeriod, configuration.bufferSizeInFrames - periodFrames))
        underrunFloorInFrames = startBuffer
        bytesPerFrame = configuration.bytesPerFrame
        format = configuration.sampleFormat
        floatPeriod = .allocate(capacity: periodFrames * channelCount)
        floatPeriod.initialize(repeating: 0, count: periodFrames * channelCount)
        devicePeriod = .allocate(byteCount: periodFrames * bytesPerFrame, alignment: 16)
        stagingCapacityInFrames = max(prefillLimitInFrames, configuration.bufferSizeInFrames) + periodFrames
        staging = .allocate(byteCount: stagingCapacityInFrames * bytesPerFrame, alignment: 16)
        scaledStaging = .allocate(byteCount: stagingCapacityInFrames * bytesPerFrame, alignment: 16)
        gain = Float(bitPattern: shared.outputGainBits.load(ordering: .relaxed))
        historyCapacityInFrames = configuration.bufferSizeInFrames + stagingCapacityInFrames + 2 * periodFrames
        history = .allocate(byteCount: historyCapacityInFrames * bytesPerFrame, alignment: 16)
        history.initializeMemory(as: UInt8.self, repeating: 0, count: historyCapacityInFrames * bytesPerFrame)
        timeline = OutputTimeline(capacity: 256)
    }

    deinit {
        prerollSlots.deallocate()
        floatPeriod.deallocate()
        devicePeriod.deallocate()
        staging.deallocate()
        scaledStaging.deallocate()
        history.deallocate()
    }

    // MARK: - Loop

    /// Runs until `.stop`. Asks for SCHED_FIFO at `realtimePriority` and carries on without.
    mutating func run(realtimePriority: Int32?) {
        if let realtimePriority {
            shared.isRealtime.store(PlatformThread.requestRealtimePriority(realtimePriority), ordering: .relaxed)
        }
        let wakeSlot = device.pollDescriptorCount
        device.pollDescriptors[wakeSlot] = pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0)
        while !stopRequested {
            processCommands()
            if stopRequested { break }
            service()
            if wakeDecoderAfterService || wakeDecoder {
                wakeDecoderAfterService = false
                wakeDecoder = false
                decoderWake.signal()
            }
            wakeDecoderWhenItsRoomCame()
            // Sleep: on the device while it runs (it wakes us when a refill fits), on the wake-up
            // signal always, and until the next thing due (an entry change to announce as it is
            // heard, the underrun floor while the decoder is late); poll briefly while filling
            // for a start (the decoder also wakes us when it writes).
            let watchDevice = mode == .running || mode == .draining
            let waitingForData = mode == .filling(autoStart: true) || mode == .filling(autoStart: false)
            shared.audioWantsData.store(waitingForData || starvedQueuedFrames > 0, ordering: .relaxed)
            let timeout: Int32 = waitingForData ? 2 : (watchDevice ? millisecondsUntilDue() : -1)
            if watchDevice {
                _ = poll(device.pollDescriptors, nfds_t(device.pollDescriptorCount + 1), timeout)
            } else {
                _ = poll(device.pollDescriptors + wakeSlot, 1, timeout)
            }
            if device.pollDescriptors[wakeSlot].revents != 0 { wake.drain() }
        }
        _ = device.drop()
    }

    /// Until the next thing the loop must do without being woken, while the device runs: the
    /// next entry change written (announced when it is heard, not a refill later), the underrun
    /// floor while the decoder is late, and at most 200 ms.
    private func millisecondsUntilDue() -> Int32 {
        let rate = device.configuration.sampleRate
        var frames = rate / 5
        if let next = timeline.nextPendingFrame { frames = min(frames, max(0, next - lastPlayedFrame)) }
        if starvedQueuedFrames > 0 { frames = min(frames, max(0, starvedQueuedFrames - underrunFloorInFrames)) }
        if mode == .draining, let drop = endOfQueueDropFrame { frames = min(frames, max(0, drop - lastPlayedFrame)) }
        return Int32(max(1, (frames * 1_000 + rate - 1) / rate))
    }

    /// Wakes the decoder once the ring has as much room as it waits for (see
    /// `EngineSharedState.decoderWaitsForUnreadAtMost`); the fence pairs with the decoder's
    /// between its threshold's store and its look at the ring, so one of the two sees the other.
    private mutating func wakeDecoderWhenItsRoomCame() {
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        let threshold = shared.decoderWaitsForUnreadAtMost.load(ordering: .relaxed)
        guard threshold >= 0, ring.availableCount() <= threshold,
              shared.decoderWaitsForUnreadAtMost.compareExchange(expected: threshold, desired: -1, ordering: .relaxed).exchanged
        else { return }
        decoderWake.signal()
    }

    // MARK: - Commands

    private mutating func processCommands() {
        while let command = commands.pop() {
            shared.lastCommandWake.store(monotonicNanoseconds() &- shared.commandSentAt.load(ordering: .relaxed),
                                         ordering: .relaxed)
            switch command {
            case .start:
                switch mode {
                case .ready: startDevice()
                case .filling: mode = .filling(autoStart: true)
                case .paused: resumeDevice()
                default: break
                }
            case .pause:
                switch mode {
                case .running, .draining:
                    if devicePausesInPlace && device.pause(true) == 0 {
                        mode = .paused
                    } else {
                        // No pause in place: drop, and keep what was unheard to write again.
                        let played = playedFrame()
                        restartOutput(played: played, replayFrom: played, autoStart: false)
                    }
                case .filling: mode = .filling(autoStart: false)
                default: break
                }
            case .resume:
                switch mode {
                case .paused: resumeDevice()
                case .ready: startDevice()
                case .filling: mode = .filling(autoStart: true)
                default: break
                }
            case .skipToNext(let askProvider):
                if askProvider {
                    shared.skipsWaitingForDecoder.add(1, ordering: .relaxed)
                    flushAndRequest(.next(after: heardOrReadToken(), epoch: requiredEpoch &+ 1))
                } else {
                    skipToNext()
                }
            case .skipToPrevious:
                flushAndRequest(.previous(before: heardOrReadToken(), epoch: requiredEpoch &+ 1))
            case .seek(let frame, let serial):
                pendingSeekSerial = serial
                flushAndRequest(.reposition(token: heardOrReadToken(), frame: frame, epoch: requiredEpoch &+ 1))
            case .applyGain:
                applyGain(Float(bitPattern: shared.outputGainBits.load(ordering: .relaxed)))
            case .stop:
                stopRequested = true
            }
        }
    }

    /// A new volume on an output without its own: the frames the device holds (up to its deep
    /// buffer) were written at the old one, so they are dropped and written again from the
    /// history at the new one, from the frame playing now, as a pause without a pause in place
    /// does; staged frames take it as they are written.
    private mutating func applyGain(_ newGain: Float) {
        guard newGain != gain else { return }
        gain = newGain
        switch mode {
        case .running, .draining:
            let played = playedFrame()
            restartOutput(played: played, replayFrom: played, autoStart: true)
        case .paused:
            let played = playedFrame()
            restartOutput(played: played, replayFrom: played, autoStart: false)
        default:
            break
        }
    }

    private var isPlaying: Bool {
        switch mode {
        case .running, .draining, .filling(autoStart: true): true
        default: false
        }
    }

    /// The entry at the output (heard, or about to be heard when the device starts).
    private func heardOrReadToken() -> UInt64 {
        guard let current = timeline.current(atPlayed: playedFrame()), current.kind != .endOfQueue else {
            return readToken
        }
        return current.token
    }

    /// Skip to the entry after the one heard, from the fastest place that holds its start:
    /// the device buffer (written, not yet heard), the ring, the preroll slot, or the decoder.
    private mutating func skipToNext() {
        let played = playedFrame()
        advanceTimeline(toPlayed: played)
        let autoStart = isPlaying || mode == .finished
        if let start = timeline.firstEntryStart(after: played) {
            shared.skipsFromDeviceBuffer.add(1, ordering: .relaxed)
            restartOutput(played: played, replayFrom: start, autoStart: autoStart)
            return
        }
        if prerollSlotIndex < 0, segmentEpoch == requiredEpoch, let marker = markers.peek(),
           marker.epoch == requiredEpoch, marker.kind == .entryStart || marker.kind == .endOfQueue {
            // The next entry's start is already decoded: drop the rest of this one.
            shared.skipsFromRing.add(1, ordering: .relaxed)
            _ = ring.discard(upTo: (marker.ringFrame - ring.totalRead / channelCount) * channelCount)
            releasePeriodRemainder()
            restartOutput(played: played, replayFrom: nil, autoStart: autoStart)
            return
        }
        for index in prerollSlots.indices {
            let slot = prerollSlots[index].takeUnretainedValue()
            if slot.state.compareExchange(expected: PrerollSlot.ready, desired: PrerollSlot.taken,
                                          ordering: .acquiringAndReleasing).exchanged {
                shared.skipsFromPreroll.add(1, ordering: .relaxed)
                releasePrerollSlot()
                requiredEpoch &+= 1
                sendToDecoder(.continueAfterPreroll(slot: index, epoch: requiredEpoch))
                // The preroll holds ~0.19 s: wake the decoder once the device has started, so
                // it does not compete with the start for a core.
                wakeDecoderAfterService = true
                releasePeriodRemainder()
                restartOutput(played: played, replayFrom: nil, autoStart: autoStart)
                prerollSlotIndex = index
                prerollOffset = 0
                beginSegment(kind: .entryStart, token: slot.token, entryFrame: slot.entryFrame, isNatural: false)
                return
            }
        }
        shared.skipsWaitingForDecoder.add(1, ordering: .relaxed)
        flushAndRequest(.next(after: heardOrReadToken(), epoch: requiredEpoch &+ 1))
    }

    /// Queues `request` for the decoder and counts it (`decoderRequestsSent`: while the decoder
    /// has not taken it, a read of its that waits for a download gives up).
    private mutating func sendToDecoder(_ request: DecoderRequest) {
        if requests.push(request) { shared.decoderRequestsSent.add(1, ordering: .releasing) }
    }

    /// Drops what the device holds and everything decoded, and asks the decoder for `request`
    /// (whose epoch must be `requiredEpoch + 1`).
    private mutating func flushAndRequest(_ request: DecoderRequest) {
        let played = playedFrame()
        advanceTimeline(toPlayed: played)
        let autoStart = isPlaying || mode == .finished
        releasePrerollSlot()
        requiredEpoch &+= 1
        sendToDecoder(request)
        decoderWake.signal()
        releasePeriodRemainder()
        restartOutput(played: played, replayFrom: nil, autoStart: autoStart)
    }

    private mutating func releasePrerollSlot() {
        if prerollSlotIndex >= 0 {
            prerollSlots[prerollSlotIndex]._withUnsafeGuaranteedRef {
                $0.state.store(PrerollSlot.empty, ordering: .releasing)
            }
            prerollSlotIndex = -1
            wakeDecoder = true  // it fills the free slot with the entry after the next
        }
    }

    private mutating func releasePeriodRemainder() {
        periodPendingCount = 0
        periodPendingOffset = 0
        periodRendered = 0
    }

    /// Drops the device's contents at `played` and prepares it again; the timeline continues
    /// from `played`. With `replayFrom`, the history from there on is written again first.
    private mutating func restartOutput(played: Int, replayFrom: Int?, autoStart: Bool) {
        if !deviceNeedsPrepare {
            // One call instead of two when the device's prepare discards what it held (ALSA's
            // pulse plugin replaces its stream; the native stream switches to its spare stream,
            // or writes over what it holds): a skip while playing then costs one stream set-up
            // (or one cork and uncork) less.
            let began = monotonicNanoseconds()
            if autoStart && devicePrepareDiscardsPlayback && device.prepare() == 0 {
                shared.lastDrop.store(0, ordering: .relaxed)
                shared.lastPrepare.store(monotonicNanoseconds() &- began, ordering: .relaxed)
            } else {
                let dropResult = device.drop()
                shared.lastDrop.store(monotonicNanoseconds() &- began, ordering: .relaxed)
                if dropResult < 0 { return fail(code: dropResult, operation: .drop) }
                deviceNeedsPrepare = true
            }
        }
        if autoStart {
            guard prepareDeviceIfNeeded() else { return }
        } else {
            // Prepared only when it starts: ALSA's pulse plugin connects the stream it makes at
            // a prepare uncorked, so a stream prepared long before its start would run at the
            // server, empty, until then.
            deviceNeedsPrepare = true
        }
        timeline.rewind(toPlayed: played, replayingFrom: replayFrom)
        if let replayFrom {
            replaySource = replayFrom
            replayRemaining = max(0, framesWritten - replayFrom)
        } else {
            replayRemaining = 0
        }
        if let end = endOfQueueFrame {
            if let replayFrom, end >= replayFrom {
                endOfQueueFrame = end - (replayFrom - played)
            } else if replayFrom == nil || end > played {
                endOfQueueFrame = nil
            }
        }
        framesWritten = played
        timelineFrameAtRestart = played
        stagedFrames = 0
        primedAnnounced = false
        inUnderrun = false
        mode = .filling(autoStart: autoStart)
        announcesCues = !autoStart
        publishPosition(played: played)
    }

    /// Writes the staged frames into the prepared device and starts it: the first frame the
    /// device plays is the first frame staged.
    private mutating func startDevice() {
        guard prepareDeviceIfNeeded() else { return }
        var began = monotonicNanoseconds()
        guard writeStagedFrames() else { return }
        var ended = monotonicNanoseconds()
        shared.lastStartWrite.store(ended &- began, ordering: .relaxed)
        began = ended
        let result = device.start()
        ended = monotonicNanoseconds()
        shared.lastStart.store(ended &- began, ordering: .relaxed)
        if result < 0 { return fail(code: result, operation: .start) }
        mode = endOfQueueFrame == nil ? .running : .draining
    }

    /// Prepares the device when it was dropped and not prepared since. False after a failure.
    private mutating func prepareDeviceIfNeeded() -> Bool {
        guard deviceNeedsPrepare else { return true }
        let began = monotonicNanoseconds()
        let result = device.prepare()
        shared.lastPrepare.store(monotonicNanoseconds() &- began, ordering: .relaxed)
        if result < 0 {
            fail(code: result, operation: .prepare)
            return false
        }
        deviceNeedsPrepare = false
        return true
    }

    /// Moves staged frames into the device, as many as it takes. False after a device failure.
    private mutating func writeStagedFrames() -> Bool {
        var source = staging
        if gain != 1 && stagedFrames > 0 {
            copySamples(staging, count: stagedFrames * channelCount, to: scaledStaging, format: format, gain: gain)
            source = scaledStaging
        }
        var offset = 0
        while offset < stagedFrames {
            let result = device.write(source + offset * bytesPerFrame, frameCount: stagedFrames - offset)
            if result == -Int(EAGAIN) || result == 0 { break }
            if result < 0 {
                recoverDevice(result)  // drops what is staged
                return false
            }
            offset += result
        }
        if offset > 0 && offset < stagedFrames {
            // The device took less than it had room for: what is left goes out first next time.
            staging.copyMemory(from: staging + offset * bytesPerFrame, byteCount: (stagedFrames - offset) * bytesPerFrame)
        }
        stagedFrames -= offset
        return true
    }

    private mutating func resumeDevice() {
        let result = device.pause(false)
        if result < 0 { return fail(code: result, operation: .pause) }
        mode = endOfQueueFrame == nil ? .running : .draining
    }

    private mutating func fail(code: Int32, operation: DeviceOperation) {
        mode = .failed
        _ = events.push(.deviceFailed(code: code, operation: operation))
        decoderWake.signal()
    }

    // MARK: - Writing

    /// Writes what the device can take and publishes what was heard.
    private mutating func service() {
        discardStaleFrames()
        // A plain load on every turn; the read-modify-write only when a test asked for an error.
        if shared.simulatedDeviceError.load(ordering: .relaxed) != 0 {
            let simulatedError = shared.simulatedDeviceError.exchange(0, ordering: .relaxed)
            if mode == .running || mode == .draining { recoverDevice(simulatedError) }
        }
        switch mode {
        case .filling(let autoStart):
            fill(autoStart: autoStart)
        case .running, .draining:
            writeAvailable()
        case .ready, .paused, .finished, .failed:
            break
        }
        let played = playedFrame()
        advanceTimeline(toPlayed: played)
        publishPosition(played: played)
        if shared.appliedSeekSerial.load(ordering: .relaxed) != reachedSeekSerial {
            shared.appliedSeekSerial.store(reachedSeekSerial, ordering: .sequentiallyConsistent)
        }
        if mode == .draining, let drop = endOfQueueDropFrame, played >= drop {
            _ = device.drop()
            mode = .finished
        }
    }

    /// Stages the first frames for the stopped device. Primed when the staging holds the
    /// prefill, when the queue's end was read, or (when it should start) as soon as a period
    /// is in and nothing more is ready.
    private mutating func fill(autoStart: Bool) {
        var wroteSomething = false
        while framesWritten - timelineFrameAtRestart + periodFrames <= prefillLimitInFrames || periodPendingCount > 0 {
            if stagingRoomInFrames < periodFrames { break }
            // Before `play()`, only whole periods: what is staged then is exactly what was
            // decoded (a skip can find the next entry's start there).
            let written = writeOnePeriod(padWithSilence: false, allowPartial: autoStart)
            if written < 0 { return }
            if written == 0 { break }
            wroteSomething = true
        }
        let buffered = framesWritten - timelineFrameAtRestart
        let full = buffered + periodFrames > prefillLimitInFrames || stagingRoomInFrames < periodFrames
        let primed = full || endOfQueueFrame != nil || (autoStart && buffered > 0 && !wroteSomething)
        guard primed else { return }
        if !primedAnnounced {
            primedAnnounced = true
            _ = events.push(.primed)
            decoderWake.signal()
        }
        if autoStart {
            if buffered == 0 && endOfQueueFrame != nil {
                mode = .draining
            } else {
                startDevice()
            }
        } else {
            mode = .ready
        }
    }

    /// Keeps the running device fed: renders what it has room for, period by period, into the
    /// staging and writes it in one call. Pads with silence when the queue has ended (draining,
    /// at most one buffer of silence past the end) or when the decoder is late and the device
    /// holds less than `underrunFloorInFrames` (an underrun, unless configured to wait); above
    /// that floor it waits for the decoder (`starvedQueuedFrames`), so that a deep buffer with
    /// room after a start or a skip is not padded with silence while the decoder catches up.
    /// Writes at most one buffer per call, so a device that always has room (`null`) does not
    /// keep the loop from its commands.
    private mutating func writeAvailable() {
        starvedQueuedFrames = 0
        if stagedFrames > 0 {
            guard writeStagedFrames(), stagedFrames == 0 else { return }
        }
        let bufferFrames = device.configuration.bufferSizeInFrames
        var budget = bufferFrames
        while budget > 0 {
            let available = device.availableFrames()
            if available < 0 { return recoverDevice(available) }
            if available < periodFrames { return }
            let queued = max(0, bufferFrames - available)
            var rendered = 0
            while rendered + periodFrames <= available && stagingRoomInFrames >= periodFrames {
                if let end = endOfQueueFrame, framesWritten - end >= bufferFrames { break }
                let pad = endOfQueueFrame != nil || (insertsSilenceOnUnderrun && queued + rendered < underrunFloorInFrames)
                let written = writeOnePeriod(padWithSilence: pad)
                if written < 0 { return }
                if written == 0 { break }
                rendered += written
            }
            guard writeStagedFrames(), stagedFrames == 0 else { return }
            if rendered == 0 {
                if endOfQueueFrame == nil { starvedQueuedFrames = max(1, queued) }
                return
            }
            budget -= rendered
        }
    }

    /// Renders one period (or finishes the pending part of the last one) and stages it.
    /// A period that could only be partly rendered is kept for more frames unless
    /// `allowPartial` (or the queue ended). Returns frames staged, 0 when nothing was
    /// ready or the staging is full.
    private mutating func writeOnePeriod(padWithSilence: Bool, allowPartial: Bool = true) -> Int {
        if periodPendingCount == 0 {
            renderPeriod(padWithSilence: padWithSilence)
            if wakeDecoder {
                wakeDecoder = false
                decoderWake.signal()
            }
            if periodRendered == 0 { return 0 }
            if periodRendered < periodFrames && !allowPartial && endOfQueueFrame == nil { return 0 }
            periodPendingOffset = 0
            periodPendingCount = periodRendered
            periodRendered = 0
        }
        let pending = devicePeriod + periodPendingOffset * bytesPerFrame
        // Staged, never written here: while the device is stopped, where a plugin could play
        // them; while it runs, the caller writes the staging in one call.
        let result = min(periodPendingCount, stagingRoomInFrames)
        if result == 0 { return 0 }
        (staging + stagedFrames * bytesPerFrame).copyMemory(from: pending, byteCount: result * bytesPerFrame)
        stagedFrames += result
        recordHistory(pending, frameCount: result)
        periodPendingOffset += result
        periodPendingCount -= result
        return result
    }

    /// The render step: adds to `devicePeriod`, in device format, up to a whole period, from
    /// the history (replays) or from the preroll slot and the ring, padded with silence when
    /// asked. Pure Swift; the compiler checks it takes no lock and allocates nothing
    /// (`@_noLocks`, optimized builds).
#if MUSICKIT_CHECKS_NO_LOCKS
    @_noLocks
#endif
    private mutating func renderPeriod(padWithSilence: Bool) {
        let wanted = periodFrames - periodRendered
        let destination = devicePeriod + periodRendered * bytesPerFrame
        var rendered = 0
        if replayRemaining > 0 {
            rendered = copyFromHistory(into: destination, maximumFrames: wanted)
        } else {
            rendered = renderFromSources(maximumFrames: wanted, atTimelineFrame: framesWritten + periodRendered)
            if rendered > 0 {
                convertSamples(floatPeriod, count: rendered * channelCount, to: destination, format: format)
            }
        }
        periodRendered += rendered
        if periodRendered < periodFrames && padWithSilence {
            // Silence: the queue ended (draining) or the decoder is late (underrun).
            (devicePeriod + periodRendered * bytesPerFrame)
                .initializeMemory(as: UInt8.self, repeating: 0, count: (periodFrames - periodRendered) * bytesPerFrame)
            if endOfQueueFrame == nil {
                underrunSilenceFrames += periodFrames - periodRendered
                shared.underrunSilenceFrames.store(underrunSilenceFrames, ordering: .relaxed)
                if !inUnderrun {
                    inUnderrun = true
                    underruns += 1
                    shared.underruns.store(underruns, ordering: .relaxed)
                    _ = events.push(.underrun(total: underruns))
                    wakeDecoder = true
                }
            } else if mode == .running {
                mode = .draining
            }
            periodRendered = periodFrames
        } else if periodRendered == periodFrames && rendered > 0 {
            inUnderrun = false
        }
    }

#if MUSICKIT_CHECKS_NO_LOCKS
    @_noLocks
#endif
    private mutating func copyFromHistory(into destination: UnsafeMutableRawPointer, maximumFrames: Int) -> Int {
        let count = min(maximumFrames, replayRemaining)
        for frame in 0..<count {
            let slot = (replaySource + frame) % historyCapacityInFrames
            (destination + frame * bytesPerFrame)
                .copyMemory(from: history + slot * bytesPerFrame, byteCount: bytesPerFrame)
        }
        replaySource += count
        replayRemaining -= count
        return count
    }

#if MUSICKIT_CHECKS_NO_LOCKS
    @_noLocks
#endif
    private mutating func recordHistory(_ bytes: UnsafeRawPointer, frameCount: Int) {
        var remaining = frameCount
        var source = bytes
        while remaining > 0 {
            let slot = framesWritten % historyCapacityInFrames
            let run = min(remaining, historyCapacityInFrames - slot)
            (history + slot * bytesPerFrame).copyMemory(from: source, byteCount: run * bytesPerFrame)
            framesWritten += run
            remaining -= run
            source += run * bytesPerFrame
        }
    }

    /// After -EPIPE (underrun at the device) or -ESTRPIPE (suspend): recover, count, refill.
    private mutating func recoverDevice(_ error: Int) {
        let result = device.recover(from: Int32(error))
        if result < 0 { return fail(code: Int32(error), operation: .write) }
        xruns += 1
        shared.xruns.store(xruns, ordering: .relaxed)
        _ = events.push(.xrun(total: xruns))
        decoderWake.signal()
        // The device is prepared again: what comes next is staged, and written when it starts.
        let wasPlaying = isPlaying
        stagedFrames = 0
        timelineFrameAtRestart = playedFrame()
        framesWritten = max(framesWritten, timelineFrameAtRestart)
        mode = .filling(autoStart: wasPlaying)
        primedAnnounced = true
    }

    // MARK: - Reading decoded frames

    /// Fills `floatPeriod` from the preroll slot or the ring, following the markers.
    /// Returns frames rendered; stops early at the queue's end or when nothing is ready.
#if MUSICKIT_CHECKS_NO_LOCKS
    @_noLocks
#endif
    private mutating func renderFromSources(maximumFrames: Int, atTimelineFrame timelineStart: Int) -> Int {
        var filled = 0
        while filled < maximumFrames {
            if prerollSlotIndex >= 0 {
                let slot = prerollSlots[prerollSlotIndex]
                let slotFrames = slot._withUnsafeGuaranteedRef { $0.frameCount }
                let slotSamples = slot._withUnsafeGuaranteedRef { $0.samples }
                let count = min(maximumFrames - filled, slotFrames - prerollOffset)
                UnsafeMutableRawPointer(floatPeriod + filled * channelCount).copyMemory(
                    from: slotSamples + prerollOffset * channelCount,
                    byteCount: count * channelCount * MemoryLayout<Float>.stride)
                prerollOffset += count
                readEntryFrame += count
                filled += count
                if prerollOffset == slotFrames { releasePrerollSlot() }
                continue
            }
            // Load the ring's fill level before the marker queue: a marker is pushed before
            // its frames, so any frame seen here has its marker visible below.
            let availableFrames = ring.availableCount() / channelCount
            let readFrame = ring.totalRead / channelCount
            var readable = availableFrames
            if let marker = markers.peek() {
                if marker.ringFrame == readFrame {
                    _ = markers.pop()
                    if apply(marker, atTimelineFrame: timelineStart + filled) { break }
                    continue
                }
                readable = min(readable, marker.ringFrame - readFrame)
            }
            if readable == 0 { break }
            if segmentEpoch != requiredEpoch {
                // Decoded before a skip or seek: never to be heard.
                _ = ring.discard(upTo: readable * channelCount)
                continue
            }
            let count = min(readable, maximumFrames - filled)
            let (first, second) = ring.readableSegments(maximumCount: count * channelCount)
            let destination = UnsafeMutableRawPointer(floatPeriod + filled * channelCount)
            destination.copyMemory(from: first.baseAddress!, byteCount: first.count * MemoryLayout<Float>.stride)
            if second.count > 0 {
                (destination + first.count * MemoryLayout<Float>.stride).copyMemory(
                    from: second.baseAddress!, byteCount: second.count * MemoryLayout<Float>.stride)
            }
            ring.commitRead(count: count * channelCount)
            readEntryFrame += count
            filled += count
        }
        return filled
    }

    /// After a skip or seek, drops the frames decoded before it right away (not when the
    /// render step reaches them), so the decoder has room for what comes next while the
    /// preroll plays. Stops at the first marker of the current epoch, which the render step takes.
    private mutating func discardStaleFrames() {
        var discarded = 0
        while segmentEpoch != requiredEpoch {
            let availableFrames = ring.availableCount() / channelCount
            let readFrame = ring.totalRead / channelCount
            var readable = availableFrames
            if let marker = markers.peek() {
                if marker.ringFrame == readFrame {
                    if marker.epoch == requiredEpoch { break }
                    _ = markers.pop()
                    segmentEpoch = marker.epoch
                    continue
                }
                readable = min(readable, marker.ringFrame - readFrame)
            }
            if readable == 0 { break }
            discarded += ring.discard(upTo: readable * channelCount)
        }
        if discarded > 0 { decoderWake.signal() }
    }

    /// Applies a marker reached in the ring. Returns true at the end of the queue.
    private mutating func apply(_ marker: SegmentMarker, atTimelineFrame timelineFrame: Int) -> Bool {
        segmentEpoch = marker.epoch
        guard marker.epoch == requiredEpoch else { return false }
        switch marker.kind {
        case .entryStart, .continuation:
            readToken = marker.token
            readEntryFrame = marker.entryFrame
            // An entry start right after the previous entry's frames is a natural boundary.
            let kind: TimelineSegment.Kind = marker.kind == .entryStart ? .entryStart : .continuation
            timeline.append(TimelineSegment(kind: kind, timelineFrame: timelineFrame, token: marker.token,
                                            entryFrame: marker.entryFrame,
                                            isNatural: marker.kind == .entryStart && marker.isNatural))
            // The first frames since the last seek (or a skip after it) are in the timeline:
            // `service` publishes the position from them, then this serial.
            reachedSeekSerial = pendingSeekSerial
            return false
        case .failed:
            timeline.append(TimelineSegment(kind: .failed, timelineFrame: timelineFrame, token: marker.token,
                                            entryFrame: 0, isNatural: true))
            return false
        case .endOfQueue:
            endOfQueueFrame = timelineFrame
            timeline.append(TimelineSegment(kind: .endOfQueue, timelineFrame: timelineFrame, token: marker.token,
                                            entryFrame: 0, isNatural: marker.isNatural))
            return true
        }
    }

    private mutating func beginSegment(kind: TimelineSegment.Kind, token: UInt64, entryFrame: Int, isNatural: Bool) {
        readToken = token
        readEntryFrame = entryFrame
        timeline.append(TimelineSegment(kind: kind, timelineFrame: framesWritten, token: token,
                                        entryFrame: entryFrame, isNatural: isNatural))
    }

    // MARK: - What is heard

    /// The timeline frame heard now: what reached the device (what is staged has not) less what
    /// it holds unplayed.
    private func playedFrame() -> Int {
        switch mode {
        case .filling, .ready: return timelineFrameAtRestart
        default: break
        }
        let delivered = framesWritten - stagedFrames
        let delay = device.delayFrames()
        if delay < 0 { return delivered }
        shared.latencyFrames.store(delay, ordering: .relaxed)
        return max(0, delivered - delay)
    }

    /// Announces what became audible by `played`, in order. Nothing is audible before the
    /// device starts.
    private mutating func advanceTimeline(toPlayed played: Int) {
        switch mode {
        case .filling, .ready, .failed: return
        case .running, .paused, .draining, .finished: break
        }
        let eventsBefore = events.totalWritten
        while let (segment, previous) = timeline.popHeard(atPlayed: played) {
            let previousWasEntry = previous.map { $0.kind == .entryStart || $0.kind == .continuation } ?? false
            switch segment.kind {
            case .entryStart:
                if segment.isNatural, previousWasEntry, let previous {
                    _ = events.push(.entryFinished(token: previous.token))
                }
                _ = events.push(.entryStarted(token: segment.token, streamFrame: segment.timelineFrame))
            case .continuation:
                // Heard for the first time from the middle (a seek before the stream started).
                if previous?.token != segment.token {
                    _ = events.push(.entryStarted(token: segment.token, streamFrame: segment.timelineFrame))
                }
            case .failed:
                _ = events.push(.entryFailed(token: segment.token))
            case .endOfQueue:
                if segment.isNatural, previousWasEntry, let previous {
                    _ = events.push(.entryFinished(token: previous.token))
                }
                _ = events.push(.queueFinished)
            }
        }
        if events.totalWritten != eventsBefore { decoderWake.signal() }
    }

    private mutating func publishPosition(played: Int) {
        lastPlayedFrame = played
        let position = timeline.position(atPlayed: played)
        // While the device plays, readers count on from here up to the next change (see
        // `EngineSharedState.readPosition`).
        var advanceLimit = 0
        if mode == .running || mode == .draining {
            advanceLimit = max(0, framesWritten - stagedFrames - played)
            if let next = timeline.nextPendingFrame { advanceLimit = min(advanceLimit, max(0, next - played)) }
        }
        shared.publishPosition(token: position.token, frame: position.frame, playedFrames: played,
                               advanceLimitFrames: advanceLimit, at: monotonicNanoseconds())
        switch mode {
        case .filling(autoStart: false), .ready, .paused:
            // Nothing is heard: an entry that a skip or seek put at the output is announced
            // now (a paused player shows it), not when it is heard.
            if announcesCues, let token = position.token, token != cuedToken {
                cuedToken = token
                if events.push(.entryCued(token: token)) { decoderWake.signal() }
            }
        default:
            if let token = position.token { cuedToken = token }
        }
    }
}
