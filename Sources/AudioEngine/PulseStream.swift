import CPulse
import Glibc

// The native PulseAudio/PipeWire output (the `pulseaudio` and `pulseaudio:SINK` devices), on
// libpulse's wrapper (PulseLibrary.swift) and a connection of its own (PulseConnection.swift).

/// A playback stream on a PulseAudio (or PipeWire) server through libpulse, behaving as the
/// engine expects of an output (see `AudioOutput`): created empty and below its start threshold, so
/// nothing plays until `start()` triggers it (PipeWire's pulse server ignores the trigger and
/// plays from the threshold: see `start()`; the engine writes only as it starts the stream, so
/// nothing plays before it there either); `drop()` corks and flushes it (and the next `start()`
/// uncorks it); `pause` corks in place.
///
/// A skip or a seek while playing is `prepare()`, then the new frames and `start()`. Once the
/// first stream has started, a second one (the spare) is connected beside it and kept running
/// empty; the switch corks the playing stream, writes the new frames into the spare and
/// triggers it, and the two trade places (the old one is flushed and uncorked, empty, once the
/// new one has played two buffers). The server ends the spare's underrun by rewinding the sink
/// over what it had rendered ahead and mixing the spare in from its first frame, where frames
/// written into the playing stream wait behind what the sink rendered ahead (up to one block of
/// the sink).
/// A switch is heard sooner than a write in place, in C as in the engine, and sooner still once
/// the stream asks for its timing itself (`timingTimer`): Benchmarks/RESULTS.md, 2026-12-03.
/// The server's debug log shows one rewind per switch, with
/// only silence in the spare's render queue, so no frame of the new entry is dropped (a
/// monitor, which already sent what the sink had rendered ahead, does not show the first
/// frames that the rewind put in its place, as with any stream's start). A single stream
/// corked, written and uncorked was as quick but lost ~80 frames to a second rewind.
/// Until the spare is ready, or when it is on another sink, the new frames go into the
/// playing stream in place, from the frame the server plays next (`PA_SEEK_RELATIVE_ON_READ`).
///
/// The two streams are one for the person at the desktop: a volume, mute or sink set on
/// either (pavucontrol, the desktop's mixer) is set on the other too.
///
/// Threading: libpulse's threaded main loop runs the connection on a thread of its own; every
/// call here takes that loop's lock, and its callbacks wake the audio thread through `events`,
/// the descriptor it polls. Real-time safety: this file allocates nothing after `init` on the
/// audio thread, but libpulse takes its lock and queues each write as a packet (an allocation),
/// exactly as ALSA's pulse plugin does inside `snd_pcm_writei`; the spare is made on libpulse's
/// thread. The engine's own no-allocation test runs on ALSA devices that do neither (`file`, `null`).
final class PulseStream: VolumeControlledOutput, @unchecked Sendable {
    // @unchecked: the state below is written by libpulse's thread and by the audio thread, both
    // under the main loop's lock; the rest is set in init.
    let name: String
    private(set) var configuration: PCMConfiguration
    let capabilities: AudioOutputCapabilities = [.pause, .prepareDiscardsPlayback, .realTimeClock]
    /// Signalled when the server asks for data, the buffer ran dry or the stream failed.
    let events = WakeSignal()
    /// `events`' descriptor for the audio thread's poll, followed by one free slot for the
    /// caller's wake-up descriptor (as `ALSAPCM.pollDescriptors`).
    let pollDescriptors: UnsafeMutablePointer<pollfd>
    let pollDescriptorCount = 1
    private let connection: PulseConnection
    private var library: LibPulse { connection.library }
    private var context: LibPulse.Context { connection.context }
    /// The stream that plays.
    private var stream: LibPulse.Stream?
    private let bytesPerFrame: Int
    /// The format and the buffer of both streams (the playing one and the spare).
    private var sampleSpec: pa_sample_spec
    private var bufferAttributes: pa_buffer_attr
    fileprivate var ranDry = false
    /// Whether the stream is corked (paused at the server): after `drop()` and `pause(true)`,
    /// until `start()` or `pause(false)`.
    private var isCorked = false
    /// Whether the spare is corked with the playing stream: an uncorked stream keeps the
    /// server's sink running, empty or not, so a paused or stopped player would cost the server
    /// its sink's work (~8 ms of CPU a second on the test sink) for nothing.
    private var isSpareCorked = false
    fileprivate var hasFailed = false

    /// Where the next write goes after `prepare()` on a running stream (until then the old
    /// frames play on); a `start()` or `pause` with nothing written flushes instead.
    private enum Replacement { case none, inPlace, toSpare }
    private var replacement = Replacement.none
    /// Frames written since the last flush: the delay while the server has not yet reported
    /// timing for the stream (right after a flush, nothing written since was played), and the
    /// room left in the buffer the flush emptied (see `roomInFrames`).
    private var framesSinceFlush = 0
    private var isClosed = false
    /// Whether the sink named in the device's name is known to the server, asked for beside the
    /// stream's creation: PulseAudio refuses a stream for a sink it does not have, but PipeWire's
    /// pulse server (0.3.65) makes it and its session manager links it to the default sink, so
    /// the music would come out of another device than the one named.
    private enum SinkLookup { case none, pending, found, missing }
    private var sinkLookup = SinkLookup.none

    /// The second stream, for switches (see the type's comment); made after the first start.
    private var spare: LibPulse.Stream?
    private enum SpareState { case none, connecting, ready, corkedAfterSwitch, failed }
    private var spareState = SpareState.none
    /// Whether the playing stream, the spare until the last switch, has not started playing since:
    /// until then an underflow it reports is from its time as the spare (the server reports a
    /// stream's underflow and its start in order).
    fileprivate var awaitsStartAfterSwitch = false
    /// Whether the playing stream was triggered since the last switch (the old one is uncorked
    /// only after that, a buffer later).
    private var startedSinceSwitch = false

    /// When the playing stream's timing (what the server played, for `delayFrames()`) is asked
    /// for next: 10 ms after each start or resume, then at doubling intervals up to 1.5 s, as
    /// libpulse's automatic updates would, but never in the same breath as a start or a switch.
    /// libpulse's own (`PA_STREAM_AUTO_TIMING_UPDATE`) sends a timing request before and after
    /// every cork and trigger and after a write that seeks, so a switch went out as request,
    /// cork, request, frames, request, trigger, request, and the server answers each request
    /// with a round trip to its sink's thread before it reads the next command, so every skip
    /// waited for those round trips (Benchmarks/RESULTS.md, 2026-12-03 afternoon).
    private var timingTimer: LibPulse.TimeEvent?
    private var timingIntervalInMicroseconds: UInt64 = PulseStream.firstTimingInterval
    private static let firstTimingInterval: UInt64 = 10_000
    private static let longestTimingInterval: UInt64 = 1_500_000

    /// `pulseaudio` (the server's default sink) or `pulseaudio:SINK`.
    static func isPulseAudioName(_ name: String) -> Bool {
        name == "pulseaudio" || name.hasPrefix("pulseaudio:")
    }

    init(name: String, request: PCMRequest) throws(PulseError) {
        self.name = name
        let sink: String? = name.hasPrefix("pulseaudio:") ? String(name.dropFirst("pulseaudio:".count)) : nil
        guard let format = request.sampleFormats.first else {
            throw PulseError(operation: "pa_stream_new", code: Int32(PA_ERR_INVALID.rawValue), device: name,
                             message: "no sample format asked for", hint: nil)
        }
        connection = try PulseConnection(deviceName: name, realtimePriority: request.realtimePriority)
        // Allocated once nothing before the deinitializer can fail.
        pollDescriptors = .allocate(capacity: 2)
        pollDescriptors.initialize(repeating: pollfd(), count: 2)
        pollDescriptors[0] = pollfd(fd: events.descriptor, events: Int16(POLLIN), revents: 0)
        bytesPerFrame = request.channelCount * format.bytesPerSample
        configuration = PCMConfiguration(sampleRate: request.sampleRate, channelCount: request.channelCount,
                                          sampleFormat: format, periodSizeInFrames: request.periodSizeInFrames,
                                          bufferSizeInFrames: request.bufferSizeInFrames, canPause: true)
        sampleSpec = pa_sample_spec(format: format.pulseFormat, rate: UInt32(request.sampleRate),
                                    channels: UInt8(request.channelCount))
        // The server's buffer is the engine's deep device buffer; it asks for frames when a
        // period (the refill, `AudioEngineConfiguration.refillDuration`) has room, and after
        // running dry it plays again once the start buffer is there (or, on PulseAudio, when
        // `start()` triggers it). Without early requests, so the server renders its sink up to
        // the buffer less two periods ahead (PulseAudio's protocol-native: a stream with
        // `PA_STREAM_EARLY_REQUESTS` sets the sink's latency to its `minreq`, and the sink then
        // wakes and the server asks for frames every period: with 256-frame periods, ~36 ms of
        // the server's CPU a second). Control does not wait for what the sink rendered ahead:
        // a flush, a cork, a new stream's start make the server rewind it.
        let bufferBytes = request.bufferSizeInFrames * bytesPerFrame
        let periodBytes = request.periodSizeInFrames * bytesPerFrame
        let startBytes = max(1, min(request.startThresholdInFrames, request.bufferSizeInFrames - request.periodSizeInFrames)) * bytesPerFrame
        bufferAttributes = pa_buffer_attr(maxlength: UInt32.max, tlength: UInt32(bufferBytes),
                                          prebuf: UInt32(startBytes), minreq: UInt32(periodBytes),
                                          fragsize: UInt32.max)
        let me = Unmanaged.passUnretained(self).toOpaque()
        connection.lock()
        do throws(PulseError) {
            // Not corked at first, as the plugin's is not: nothing is written before `start()`, and
            // a stream made corked and uncorked by its first start was heard a block of the sink
            // later (probably the uncork's rewind of the sink coming before the trigger made the
            // frames playable): `musickit play FILE` 0.54 ms later at the monitor, the song's first
            // ~80 frames landing in a block already sent (Benchmarks/RESULTS.md, 2026-12-01 evening).
            if let sink {
                // Sent first, so answered before the stream is: the wait below is no longer.
                sinkLookup = .pending
                release(sink.withCString { name in
                    library.contextSinkInfoByName(context, name, { _, info, endOfList, userdata in
                        PulseStream.with(userdata) { me in
                            if info != nil {
                                me.sinkLookup = .found
                            } else if endOfList != 0, me.sinkLookup == .pending {
                                me.sinkLookup = .missing
                            }
                            me.connection.signal()
                        }
                    }, me)
                })
            }
            guard let stream = connectStream(sink: sink) else { throw connection.error("pa_stream_connect_playback") }
            self.stream = stream
            while true {
                if sinkLookup == .missing {
                    throw connection.error("pa_stream_connect_playback", code: Int32(PA_ERR_NOENTITY.rawValue))
                }
                let state = library.streamState(stream)
                if state == PA_STREAM_READY && sinkLookup != .pending { break }
                if state == PA_STREAM_FAILED || state == PA_STREAM_TERMINATED { throw connection.error("pa_stream_connect_playback") }
                try connection.waitWhileOpening("pa_stream_connect_playback")
            }
            timingTimer = library.contextTimerNew(context, UInt64.max /* PA_USEC_INVALID: not armed */, { _, _, _, userdata in
                PulseStream.with(userdata) { $0.timingTimerFired() }
            }, me)
            if let granted = library.streamBufferAttributes(stream)?.pointee {
                configuration.bufferSizeInFrames = Int(granted.tlength) / bytesPerFrame
                configuration.periodSizeInFrames = max(1, Int(granted.minreq) / bytesPerFrame)
            }
            connection.unlock()
        } catch {
            connection.unlock()
            close()
            throw error
        }
    }

    deinit {
        close()
        pollDescriptors.deallocate()
    }

    /// Stops libpulse's thread (joining it: no callback runs after this) and closes the streams
    /// and the connection; once. The owner calls it before it lets the stream go (see
    /// `AudioOutput`): a callback running on libpulse's thread may hold a reference for a moment
    /// (a debug build retains around calls), and were the owner's release not the last one, the
    /// deinitializer would run there and stop the loop from its own thread (libpulse aborts:
    /// seen in a test's seek).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        connection.stopLoop()
        for case let stream? in [stream, spare] {
            library.streamSetStateCallback(stream, nil, nil)
            library.streamSetWriteCallback(stream, nil, nil)
            library.streamSetUnderflowCallback(stream, nil, nil)
            library.streamSetStartedCallback(stream, nil, nil)
            _ = library.streamDisconnect(stream)
            library.streamUnref(stream)
        }
        stream = nil
        spare = nil
        connection.close()
    }

    /// Runs a callback's `body` on the stream behind `userdata` without retaining it (the owner
    /// keeps it alive until `close()` has joined libpulse's thread).
    fileprivate static func with(_ userdata: UnsafeMutableRawPointer?, _ body: (PulseStream) -> Void) {
        Unmanaged<PulseStream>.fromOpaque(userdata!)._withUnsafeGuaranteedRef(body)
    }

    /// A new playback stream on `sink` (the server's default when nil), with this stream's
    /// callbacks, connecting (under the loop's lock). Nil when libpulse refused it.
    private func connectStream(sink: String?, name: String = PulseStream.playingName) -> LibPulse.Stream? {
        guard let stream = library.streamNew(context, name, &sampleSpec, nil) else { return nil }
        let me = Unmanaged.passUnretained(self).toOpaque()
        library.streamSetStateCallback(stream, { stream, userdata in
            PulseStream.with(userdata) { me in
                me.connection.raiseLoopThreadPriority()  // a begun connection may have been ready already
                me.streamStateChanged(stream)
            }
        }, me)
        // Any stream's request wakes the audio thread; it asks the playing one what it takes.
        library.streamSetWriteCallback(stream, { _, _, userdata in PulseStream.with(userdata) { $0.events.signal() } }, me)
        library.streamSetUnderflowCallback(stream, { stream, userdata in
            PulseStream.with(userdata) { me in
                // The spare runs empty on purpose, and its last underflow may come after the
                // switch made it the playing stream: only one after its start counts.
                guard stream == me.stream, !me.awaitsStartAfterSwitch else { return }
                me.ranDry = true
                me.events.signal()
            }
        }, me)
        library.streamSetStartedCallback(stream, { stream, userdata in
            PulseStream.with(userdata) { me in
                guard stream == me.stream else { return }
                if me.awaitsStartAfterSwitch { me.nameStreamsAfterSwitch() }
                me.awaitsStartAfterSwitch = false
                if me.spareState == .none { me.connectSpare() }
            }
        }, me)
        // No PA_STREAM_AUTO_TIMING_UPDATE: this type asks for the timing itself (`timingTimer`).
        // No PA_STREAM_EARLY_REQUESTS: see the buffer's attributes in `init`.
        let flags = pa_stream_flags_t(rawValue: PA_STREAM_INTERPOLATE_TIMING.rawValue)
        // With the player's volume when it set one (else the server's choice: the desktop may
        // restore what the person last set for this application).
        let volumeIsSet = serverVolume.channels != 0
        let result = withUnsafePointer(to: &serverVolume) { volume in
            let volume = volumeIsSet ? UnsafeRawPointer(volume) : nil
            return if let sink {
                sink.withCString { library.streamConnectPlayback(stream, $0, &bufferAttributes, flags, volume, nil) }
            } else {
                library.streamConnectPlayback(stream, nil, &bufferAttributes, flags, volume, nil)
            }
        }
        if result < 0 {
            library.streamUnref(stream)
            return nil
        }
        return stream
    }

    /// On libpulse's thread, when a stream's state changed.
    private func streamStateChanged(_ changed: LibPulse.Stream?) {
        let state = library.streamState(changed)
        if changed == stream {
            hasFailed = state == PA_STREAM_FAILED
            connection.signal()
            if hasFailed { events.signal() }
        } else if changed == spare {
            if state == PA_STREAM_READY, spareState == .connecting {
                spareState = .ready
                isSpareCorked = false
                if isCorked { corkSpare(true) }  // paused or stopped since the first start
                followSinkInputs()
            } else if state == PA_STREAM_FAILED || state == PA_STREAM_TERMINATED {
                spareState = .failed  // switches go in place from now on
            }
        }
    }

    /// On libpulse's thread, once the first stream has started: the spare, on the same sink.
    private func connectSpare() {
        guard let stream, let sink = library.streamDeviceName(stream) else { return }
        spareState = .connecting
        spare = connectStream(sink: String(cString: sink), name: PulseStream.standbyName)
        if spare == nil { spareState = .failed }
    }

    // MARK: The two streams as one at the desktop

    /// What the desktop's mixer shows beside the application's name for the stream that plays
    /// and for the spare (issue #44: two streams both called "Music" looked like a fault).
    static let playingName = "Music"
    static let standbyName = "Music (standby for the next song)"

    /// Once the spare, switched to, has started (off the switch's path, on libpulse's thread):
    /// the names follow the roles. The server announces the change; `apply` then finds the
    /// settings equal, so nothing more is sent.
    private func nameStreamsAfterSwitch() {
        if let stream { release(library.streamSetName(stream, Self.playingName, nil, nil)) }
        if let spare { release(library.streamSetName(spare, Self.standbyName, nil, nil)) }
    }

    /// Subscribes to changes of the server's streams, and gives the spare the playing stream's
    /// volume, mute and sink (on libpulse's thread).
    private func followSinkInputs() {
        let me = Unmanaged.passUnretained(self).toOpaque()
        library.contextSetSubscribeCallback(context, { _, event, index, userdata in
            let facility = event.rawValue & PA_SUBSCRIPTION_EVENT_FACILITY_MASK.rawValue
            let type = event.rawValue & PA_SUBSCRIPTION_EVENT_TYPE_MASK.rawValue
            guard facility == PA_SUBSCRIPTION_EVENT_SINK_INPUT.rawValue, type == PA_SUBSCRIPTION_EVENT_CHANGE.rawValue else { return }
            PulseStream.with(userdata) { me in
                if me.isOwnSinkInput(index) { me.copySettings(ofSinkInput: index) }
            }
        }, me)
        release(library.contextSubscribe(context, PA_SUBSCRIPTION_MASK_SINK_INPUT, nil, nil))
        if let stream { copySettings(ofSinkInput: library.streamIndex(stream)) }
    }

    private func isOwnSinkInput(_ index: UInt32) -> Bool {
        guard index != UInt32.max else { return false }  // PA_INVALID_INDEX
        return stream.map { library.streamIndex($0) == index } == true || spare.map { library.streamIndex($0) == index } == true
    }

    /// Asks for one of the two streams' settings and sets them on the other: the server
    /// announces no change when a setting is already what it is set to, so this ends.
    private func copySettings(ofSinkInput index: UInt32) {
        volumeSetsWhenAsked = volumeSets
        let me = Unmanaged.passUnretained(self).toOpaque()
        release(library.contextSinkInputInfo(context, index, { _, info, endOfList, userdata in
            guard endOfList == 0, let info = info?.pointee else { return }
            PulseStream.with(userdata) { $0.apply(info) }
        }, me))
    }

    private func apply(_ info: pa_sink_input_info) {
        guard let stream, let spare, isOwnSinkInput(info.index) else { return }
        let other = library.streamIndex(stream) == info.index ? spare : stream
        let otherIndex = library.streamIndex(other)
        var volume = info.volume
        // An answer that predates this process's own latest `setVolume` is stale: that set's own
        // change event brings the current value. (An unset `serverVolume`, no channels, equals none.)
        if volumeSets == volumeSetsWhenAsked {
            release(library.contextSetSinkInputVolume(context, otherIndex, &volume, nil, nil))
            if library.cvolumeEqual(&volume, &serverVolume) == 0 {
                serverVolume = volume  // streams made later take it too
                volumeChangedElsewhereHandler?(Double(library.cvolumeAverage(&volume)) / Double(Self.normalVolume))
            }
        }
        release(library.contextSetSinkInputMute(context, otherIndex, info.mute, nil, nil))
        if library.streamDeviceIndex(other) != info.sink {
            release(library.contextMoveSinkInput(context, otherIndex, info.sink, nil, nil))
        }
    }

    // MARK: Volume

    /// The volume set through `setVolume`, for both streams and any made later; no channels
    /// until one is set (under the loop's lock).
    private var serverVolume = pa_cvolume()
    /// How many times `setVolume` was called, and how many when the last settings were asked
    /// for (under the loop's lock).
    private var volumeSets = 0
    private var volumeSetsWhenAsked = 0
    /// Called on libpulse's thread when another client (the desktop's mixer) set the streams'
    /// volume, with the new volume (0...1, more above 100 %). Set under the loop's lock.
    var volumeChangedElsewhere: (@Sendable (Double) -> Void)? {
        get { connection.lock(); defer { connection.unlock() }; return volumeChangedElsewhereHandler }
        set { connection.lock(); defer { connection.unlock() }; volumeChangedElsewhereHandler = newValue }
    }
    private var volumeChangedElsewhereHandler: (@Sendable (Double) -> Void)?

    /// Sets both streams' volume at the server, 0...1 as the desktop's mixer shows it
    /// (`PA_VOLUME_NORM` at 1): the samples stay untouched, and the server applies it at once to
    /// what it mixes next, rewinding what it had mixed ahead.
    func setVolume(_ volume: Double) {
        connection.lock()
        defer { connection.unlock() }
        _ = library.cvolumeSet(&serverVolume, UInt32(configuration.channelCount), UInt32((volume * Double(Self.normalVolume)).rounded()))
        volumeSets += 1
        for one in [stream, spare] {
            guard let one else { continue }
            release(library.contextSetSinkInputVolume(context, library.streamIndex(one), &serverVolume, nil, nil))
        }
    }

    /// `PA_VOLUME_NORM` (a macro C's importer does not bring over): 100 %, the samples as they are.
    static let normalVolume: UInt32 = 0x10000

    /// The error for `operation`, which failed on the audio thread with `code`: the context's
    /// own error when the stream failed with it (the server went away), else libpulse's I/O error.
    func failure(_ operation: DeviceOperation, code: Int32) -> AudioOutputError {
        let function = switch operation {
        case .write: "pa_stream_write"
        case .start: "pa_stream_trigger"
        case .prepare, .drop: "pa_stream_flush"
        case .recover: "pa_stream_get_state"  // recovering fails only when the stream has failed
        case .pause: "pa_stream_cork"
        case .poll: "poll"
        }
        guard !isClosed else { return .pulse(library.error(function, code: Int32(PA_ERR_IO.rawValue), device: name)) }
        connection.lock()
        defer { connection.unlock() }
        let contextCode = library.contextErrno(context)
        return .pulse(connection.error(function, code: contextCode != 0 ? contextCode : Int32(PA_ERR_IO.rawValue)))
    }

    /// After -EPIPE (the server's buffer ran dry): what was written since stays queued (the
    /// server plays it once `start()` triggers the stream again), nothing is flushed. Any other
    /// error is not recoverable here.
    func recover(from error: Int32) -> Int32 {
        guard error == -EPIPE else { return error }
        return locked { _ in
            if hasFailed { return -EIO }
            ranDry = false
            return 0
        }
    }

    // MARK: Operations of the audio thread (each under the main loop's lock)

    @inline(__always)
    private func locked<T>(_ body: (LibPulse.Stream) -> T) -> T {
        connection.lock()
        defer { connection.unlock() }
        return body(stream!)
    }

    /// Frames the server takes now; -EPIPE after the buffer ran dry, -EIO when the stream failed.
    func availableFrames() -> Int {
        events.drain()
        return locked { stream in
            if hasFailed { return -Int(EIO) }
            if ranDry && replacement == .none { return -Int(EPIPE) }
            return roomInFrames(stream)
        }
    }

    /// What the server has room for: what it asked for, or, until a buffer's worth has been
    /// written since a flush, the rest of that buffer. A flush empties the server's queue at
    /// once, but libpulse learns of the room only from the server's next request, a round trip
    /// later; until then it still counts the full buffer that was playing, and a start after
    /// a skip or a seek would write nothing (and the server, triggered empty, would wait for
    /// its start threshold: heard 35-65 ms late, against ~1 ms).
    private func roomInFrames(_ stream: LibPulse.Stream) -> Int {
        max(library.streamWritableSize(stream) / bytesPerFrame, configuration.bufferSizeInFrames - framesSinceFlush)
    }

    /// Writes up to `frameCount` frames (what the server has room for); -EAGAIN when none fit.
    func write(_ bytes: UnsafeRawPointer, frameCount: Int) -> Int {
        connection.lock()
        defer { connection.unlock() }
        if hasFailed { return -Int(EIO) }
        if ranDry && replacement == .none { return -Int(EPIPE) }
        if replacement == .toSpare { switchToSpare() }
        if spareState == .corkedAfterSwitch && startedSinceSwitch && framesSinceFlush >= 2 * configuration.bufferSizeInFrames,
           let spare {
            // The old stream, flushed now, runs empty again, ready for the next one. Not
            // before a buffer has played since the switch (two written): its uncork rewinds the
            // sink (to mix in whatever it holds, here nothing), and the sink renders the new
            // stream over again; sent with the switch, it made the switch ~0.5 ms slower.
            release(library.streamFlush(spare, nil, nil))
            release(library.streamCork(spare, 0, nil, nil))
            spareState = .ready
            isSpareCorked = false
        }
        let stream = stream!
        let frames = min(frameCount, roomInFrames(stream))
        if frames == 0 { return -Int(EAGAIN) }
        // No free callback: libpulse copies the frames into its own memory block. A write after
        // `prepare()` goes in from the frame the server plays next, over what it held (in the
        // spare, nothing): what it held beyond the new frames is written over by the next periods
        // (the engine writes whole periods, padded with silence when the queue ends or, by
        // default, when the decoder is late: nothing of it plays).
        let seek = replacement == .none ? PA_SEEK_RELATIVE : PA_SEEK_RELATIVE_ON_READ
        let result = library.streamWrite(stream, bytes, frames * bytesPerFrame, nil, 0, seek)
        if result < 0 { return -Int(EIO) }
        if replacement != .none {
            replacement = .none
            ranDry = false
        }
        framesSinceFlush += frames
        return frames
    }

    /// The switch (under the loop's lock, before the new frames' write): the playing stream is
    /// corked, which takes what the sink rendered of it back (it is flushed later, off the
    /// switch's path: each operation is a round trip between the server's threads); the spare
    /// plays next.
    private func switchToSpare() {
        guard let old = stream, let new = spare else { return }
        release(library.streamCork(old, 1, nil, nil))
        stream = new
        spare = old
        awaitsStartAfterSwitch = true
        spareState = .corkedAfterSwitch
        startedSinceSwitch = false
        isCorked = false
    }

    /// Frames written and not yet heard (the server's buffer and the sink's latency).
    func delayFrames() -> Int {
        locked { stream in
            var microseconds: UInt64 = 0
            var negative: Int32 = 0
            guard library.streamLatency(stream, &microseconds, &negative) == 0 else { return framesSinceFlush }
            if negative != 0 { return 0 }
            return min(Int(microseconds) * configuration.sampleRate / 1_000_000, framesSinceFlush)
        }
    }

    /// Plays what was written, from its first frame: on PulseAudio even below the server's start
    /// threshold; on PipeWire's pulse server once the frames that follow reach it (below).
    func start() -> Int32 {
        locked { stream in
            if hasFailed { return -EIO }
            flushIfPrepared(stream)
            if isCorked {
                release(library.streamCork(stream, 0, nil, nil))
                isCorked = false
            }
            release(library.streamTrigger(stream, nil, nil))
            corkSpare(false)
            startedSinceSwitch = true
            scheduleTimingUpdates()
            // Wakes the audio thread when a period fits, as an ALSA device's poll does: the server
            // asks for frames only once it plays. PipeWire's pulse server (0.3.65, Debian 12)
            // ignores the trigger and plays a stream from its start threshold, in whole quanta of
            // its graph; a short last entry after a skip (882 frames) waited there for the silence
            // after it, which the audio thread wrote only when its poll timed out, 200 ms later,
            // and on a graph at 1,024 frames was not heard at all before the end-of-queue drop
            // (Benchmarks/RESULTS.md, 2026-12-03 night).
            if roomInFrames(stream) >= configuration.periodSizeInFrames { events.signal() }
            return 0
        }
    }

    /// Stops and discards what the server holds; nothing plays until `start()`.
    func drop() -> Int32 {
        locked { stream in
            if hasFailed { return -EIO }
            release(library.streamCork(stream, 1, nil, nil))
            isCorked = true
            release(library.streamFlush(stream, nil, nil))
            corkSpare(true)
            replacement = .none
            ranDry = false
            framesSinceFlush = 0
            return 0
        }
    }

    /// Readies the stream for new frames. A corked one (dropped or paused) is flushed at once; on
    /// a running one, the next write goes into the spare when it is ready on the same sink (see
    /// the type's comment), else replaces what the playing stream holds from the frame it plays
    /// next (a skip or a seek while playing, which `start()` follows at once). Corked, flushed
    /// and uncorked by the start, one stream was heard a block of the sink later and the new
    /// frames' first ~80 were missing at the monitor, landing +74…+84 (Benchmarks/RESULTS.md,
    /// 2026-12-01).
    func prepare() -> Int32 {
        locked { stream in
            if hasFailed { return -EIO }
            if isCorked {
                release(library.streamFlush(stream, nil, nil))
            } else if spareState == .ready, let spare,
                      library.streamDeviceIndex(spare) == library.streamDeviceIndex(stream) {
                replacement = .toSpare
            } else {
                replacement = .inPlace
            }
            ranDry = false
            framesSinceFlush = 0
            return 0
        }
    }

    /// The flush of what the server holds when `start()` or `pause` comes after `prepare()` with
    /// nothing written since (under the loop's lock).
    private func flushIfPrepared(_ stream: LibPulse.Stream) {
        guard replacement != .none else { return }
        replacement = .none
        release(library.streamFlush(stream, nil, nil))
        ranDry = false
    }

    func pause(_ enable: Bool) -> Int32 {
        locked { stream in
            if hasFailed { return -EIO }
            flushIfPrepared(stream)
            release(library.streamCork(stream, enable ? 1 : 0, nil, nil))
            isCorked = enable
            corkSpare(enable)
            if !enable { scheduleTimingUpdates() }
            return 0
        }
    }

    /// Corks or uncorks the spare with the playing stream, when it is the running-empty spare
    /// (under the loop's lock; sent after the playing stream's own cork or trigger, off their path).
    private func corkSpare(_ cork: Bool) {
        guard let spare, spareState == .ready, isSpareCorked != cork else { return }
        release(library.streamCork(spare, cork ? 1 : 0, nil, nil))
        isSpareCorked = cork
    }

    /// After a start or a resume (under the loop's lock): the first timing request 10 ms later.
    /// Until its answer, `delayFrames()` counts every frame written since the flush as unheard.
    private func scheduleTimingUpdates() {
        timingIntervalInMicroseconds = PulseStream.firstTimingInterval
        armTimingTimer()
    }

    private func armTimingTimer() {
        guard let timingTimer else { return }
        library.contextTimerRestart(context, timingTimer, library.monotonicMicroseconds() + timingIntervalInMicroseconds)
        timingIntervalInMicroseconds = min(2 * timingIntervalInMicroseconds, PulseStream.longestTimingInterval)
    }

    /// On libpulse's thread: asks the server for the playing stream's timing, then again later
    /// (not while corked: the resume schedules it again).
    private func timingTimerFired() {
        guard !isClosed, !hasFailed, !isCorked, let stream else { return }
        // Between a skip's `prepare()` or switch and its `start()` (the audio thread lets the
        // lock go between the calls), a request would sit before the trigger: the start
        // schedules the next one.
        if replacement != .none || (spareState == .corkedAfterSwitch && !startedSinceSwitch) { return }
        release(library.streamUpdateTimingInfo(stream, nil, nil))
        armTimingTimer()
    }

    private func release(_ operation: LibPulse.Operation?) {
        if let operation { library.operationUnref(operation) }
    }
}
