import CALSA
import Glibc

// The one wrapper around ALSA (CALSA). Every snd_* call of the project goes through this file (as
// musickit_snd_*: libasound is opened when the first device is, see Sources/CALSA/include/CALSA.h).

/// A failed ALSA call: which operation, on which device, and the (negative) error code.
public struct ALSAError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The C function that failed, e.g. `snd_pcm_open`.
    public let operation: String
    /// The negative errno ALSA returned.
    public let code: Int32
    /// The PCM device name.
    public let device: String
    /// What to do about it, when there is something to say.
    public let hint: String?

    public var description: String {
        var text = "ALSA \(operation) on device '\(device)' failed: \(String(cString: musickit_snd_strerror(code))) (\(code))"
        if let hint { text += ". \(hint)" }
        return text
    }
}

/// Sample formats the engine writes to a PCM device (interleaved, little-endian).
public enum PCMSampleFormat: String, Sendable, CaseIterable, Hashable {
    case int16 = "S16_LE"
    case int32 = "S32_LE"
    case float32 = "FLOAT_LE"

    public var bytesPerSample: Int {
        switch self {
        case .int16: 2
        case .int32, .float32: 4
        }
    }

    var alsaFormat: snd_pcm_format_t {
        switch self {
        case .int16: SND_PCM_FORMAT_S16_LE
        case .int32: SND_PCM_FORMAT_S32_LE
        case .float32: SND_PCM_FORMAT_FLOAT_LE
        }
    }
}

/// What the device agreed to when it was configured.
public struct PCMConfiguration: Sendable, Equatable {
    public var sampleRate: Int
    public var channelCount: Int
    public var sampleFormat: PCMSampleFormat
    public var periodSizeInFrames: Int
    public var bufferSizeInFrames: Int
    /// Whether the device pauses in place (`snd_pcm_pause`); otherwise the engine drops and refills.
    public var canPause: Bool

    public var bytesPerFrame: Int { channelCount * sampleFormat.bytesPerSample }
}

/// What the engine asks of a device.
public struct PCMRequest: Sendable, Equatable {
    public var sampleRate: Int
    public var channelCount: Int
    /// Tried in order; the first the device accepts is used.
    public var sampleFormats: [PCMSampleFormat]
    /// The device's period: the audio thread wakes when this much of the buffer has room.
    public var periodSizeInFrames: Int
    public var bufferSizeInFrames: Int
    /// What the engine writes before it starts the stream: where a server would start a stream
    /// by itself (the pulse stream's `prebuf`), no more than that is ever asked to be there.
    public var startThresholdInFrames: Int
    /// SCHED_FIFO priority for a thread the output runs besides the audio thread (libpulse's,
    /// for the `pulseaudio` devices); nil to not ask.
    public var realtimePriority: Int32?
}

/// Calls an ALSA function and turns a negative result into an `ALSAError` naming it.
@discardableResult
func alsaCall(_ operation: String, device: String, hint: String? = nil,
              _ body: () -> Int32) throws(ALSAError) -> Int32 {
    let result = body()
    if result < 0 { throw ALSAError(operation: operation, code: result, device: device, hint: hint) }
    return result
}

/// An open ALSA playback PCM in non-blocking, interleaved read/write mode.
///
/// Thread safety: configured on the thread that opens it, then used by one thread at a time
/// (the engine's audio thread). Real-time safety: `write`, `availableFrames`, `delayFrames`,
/// `start`, `drop`, `prepare`, `pause`, `recover` make no allocation in this
/// file; what the ALSA plugin behind the device does is the plugin's business
/// (the `null`, `file` and `hw` plugins do not allocate; `pulse` goes through libpulse).
final class ALSAPCM: AudioOutput, @unchecked Sendable {
    let name: String
    let configuration: PCMConfiguration
    private let handle: OpaquePointer
    /// The PCM's poll descriptors, followed by one free slot for the caller's wake-up descriptor.
    let pollDescriptors: UnsafeMutablePointer<pollfd>
    let pollDescriptorCount: Int
    /// `.pause` when the device pauses in place; `.prepareDiscardsPlayback` for external
    /// (ioplug) plugins such as PulseAudio's, whose prepare replaces the server-side stream.
    /// Kernel devices refuse to prepare a running stream (-EBUSY), and the engine drops first.
    let capabilities: AudioOutputCapabilities
    private var isClosed = false

    /// Opens and configures `name` for playback. The stream starts when the caller calls
    /// `start()`, or when a period is written into it before (`configure`).
    init(name: String, request: PCMRequest) throws(ALSAError) {
        self.name = name
        if let failure = musickit_alsa_load() {
            throw ALSAError(operation: "dlopen", code: -ENOSYS, device: name,
                            hint: "\(String(cString: failure)): is alsa-lib installed (Debian: libasound2)?")
        }
        ALSAPCM.silenceLibraryErrors
        var pcm: OpaquePointer?
        let openResult = musickit_snd_pcm_open(&pcm, name, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
        if openResult < 0 {
            throw ALSAError(operation: "snd_pcm_open", code: openResult, device: name,
                            hint: ALSAPCM.openFailureHint(code: openResult, device: name))
        }
        handle = pcm!
        let isPlugin = musickit_snd_pcm_type(pcm) == SND_PCM_TYPE_IOPLUG
        do throws(ALSAError) {
            configuration = try ALSAPCM.configure(handle, name: name, request: request)
            let count = Int(try alsaCall("snd_pcm_poll_descriptors_count", device: name) {
                musickit_snd_pcm_poll_descriptors_count(pcm)
            })
            let descriptors = UnsafeMutablePointer<pollfd>.allocate(capacity: count + 1)
            descriptors.initialize(repeating: pollfd(), count: count + 1)
            do throws(ALSAError) {
                try alsaCall("snd_pcm_poll_descriptors", device: name) {
                    musickit_snd_pcm_poll_descriptors(pcm, descriptors, UInt32(count))
                }
            } catch {
                descriptors.deallocate()
                throw error
            }
            pollDescriptorCount = count
            pollDescriptors = descriptors
        } catch {
            musickit_snd_pcm_close(pcm)
            throw error
        }
        var capabilities: AudioOutputCapabilities = [.realTimeClock]
        if configuration.canPause { capabilities.insert(.pause) }
        if isPlugin { capabilities.insert(.prepareDiscardsPlayback) }
        self.capabilities = capabilities
    }

    deinit {
        close()
        pollDescriptors.deallocate()
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        musickit_snd_pcm_close(handle)
    }

    func failure(_ operation: DeviceOperation, code: Int32) -> AudioOutputError {
        let function = switch operation {
        case .write: "snd_pcm_writei"
        case .start: "snd_pcm_start"
        case .prepare: "snd_pcm_prepare"
        case .pause: "snd_pcm_pause"
        case .drop: "snd_pcm_drop"
        case .recover: "snd_pcm_recover"
        case .poll: "poll"
        }
        return .alsa(ALSAError(operation: function, code: code, device: name, hint: nil))
    }

    /// alsa-lib prints its own messages on stderr; the engine reports every failure as an
    /// `ALSAError` instead. Done once per process.
    private static let silenceLibraryErrors: Void = musickit_alsa_silence_library_errors()

    private static func configure(_ pcm: OpaquePointer, name: String,
                                  request: PCMRequest) throws(ALSAError) -> PCMConfiguration {
        var hwPointer: OpaquePointer?
        try alsaCall("snd_pcm_hw_params_malloc", device: name) { musickit_snd_pcm_hw_params_malloc(&hwPointer) }
        let hw = hwPointer!
        defer { musickit_snd_pcm_hw_params_free(hw) }
        try alsaCall("snd_pcm_hw_params_any", device: name) { musickit_snd_pcm_hw_params_any(pcm, hw) }
        try alsaCall("snd_pcm_hw_params_set_access", device: name) {
            musickit_snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED)
        }
        guard let format = request.sampleFormats.first(where: {
            musickit_snd_pcm_hw_params_test_format(pcm, hw, $0.alsaFormat) == 0
        }) else {
            throw ALSAError(operation: "snd_pcm_hw_params_set_format", code: -EINVAL, device: name,
                            hint: "the device accepts none of \(request.sampleFormats.map(\.rawValue))")
        }
        try alsaCall("snd_pcm_hw_params_set_format", device: name) {
            musickit_snd_pcm_hw_params_set_format(pcm, hw, format.alsaFormat)
        }
        try alsaCall("snd_pcm_hw_params_set_channels", device: name,
                     hint: "the device does not take \(request.channelCount) channels") {
            musickit_snd_pcm_hw_params_set_channels(pcm, hw, UInt32(request.channelCount))
        }
        var rate = UInt32(request.sampleRate)
        try alsaCall("snd_pcm_hw_params_set_rate_near", device: name) {
            musickit_snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, nil)
        }
        var periodSize = snd_pcm_uframes_t(request.periodSizeInFrames)
        try alsaCall("snd_pcm_hw_params_set_period_size_near", device: name) {
            musickit_snd_pcm_hw_params_set_period_size_near(pcm, hw, &periodSize, nil)
        }
        var bufferSize = snd_pcm_uframes_t(max(request.bufferSizeInFrames, Int(periodSize) * 2))
        try alsaCall("snd_pcm_hw_params_set_buffer_size_near", device: name) {
            musickit_snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &bufferSize)
        }
        try alsaCall("snd_pcm_hw_params", device: name) { musickit_snd_pcm_hw_params(pcm, hw) }
        try alsaCall("snd_pcm_hw_params_get_period_size", device: name) {
            musickit_snd_pcm_hw_params_get_period_size(hw, &periodSize, nil)
        }
        try alsaCall("snd_pcm_hw_params_get_buffer_size", device: name) {
            musickit_snd_pcm_hw_params_get_buffer_size(hw, &bufferSize)
        }
        let canPause = musickit_snd_pcm_hw_params_can_pause(hw) == 1

        var swPointer: OpaquePointer?
        try alsaCall("snd_pcm_sw_params_malloc", device: name) { musickit_snd_pcm_sw_params_malloc(&swPointer) }
        let sw = swPointer!
        defer { musickit_snd_pcm_sw_params_free(sw) }
        try alsaCall("snd_pcm_sw_params_current", device: name) { musickit_snd_pcm_sw_params_current(pcm, sw) }
        // Starts by itself once a period is in, which the engine writes only right before it
        // calls start() (`AudioOutput`). A period because ALSA's pulse plugin makes the
        // threshold, at least a period, in bytes, its stream's `prebuf`: the server then plays
        // a new stream as the start's period of frames arrives, without waiting for the
        // plugin's trigger, which queues behind its uncork (with a larger threshold, a seek
        // through PulseAudio was measurably later), and holds the stream's read index until then.
        // Not the boundary, the usual "never start": the boundary (the buffer times a power of
        // two, up to 2^62) times the frame size wraps to 0 in the plugin's 32-bit `prebuf`, and
        // a stream with `prebuf` 0 runs its read index on from the moment it is connected:
        // pipewire-pulse then skips as many of the first frames written as its graph played
        // before they arrived, so a skip or a seek (each re-creates the plugin's stream) was
        // heard a graph cycle late, 1,024 frames at that quantum (Benchmarks/RESULTS.md).
        let startThreshold = periodSize
        try alsaCall("snd_pcm_sw_params_set_start_threshold", device: name) {
            musickit_snd_pcm_sw_params_set_start_threshold(pcm, sw, startThreshold)
        }
        // Wakes the audio thread once a period (the engine's refill, ~180 ms) has room, not per
        // render period: with the deep buffer (~750 ms) a sound card's DMA runs on while the
        // thread wakes ~5 times a second. Control does not wait for the buffer: a skip, a seek
        // or a pause without hardware pause drops what the card holds (`snd_pcm_drop`, then
        // `prepare` and the new frames: the card plays them as soon as it starts, whatever was
        // queued), and what is heard is what was written less `snd_pcm_delay`. So `snd_pcm_rewind`
        // is not needed: it would keep the frames before the cut, which the engine writes again
        // from its own history when it needs them (a skip to an entry already in the buffer).
        // Through ALSA's pulse plugin the period is also the stream's `minreq`, and with the
        // plugin's early requests the sink's latency: the server wakes once a period too.
        try alsaCall("snd_pcm_sw_params_set_avail_min", device: name) {
            musickit_snd_pcm_sw_params_set_avail_min(pcm, sw, periodSize)
        }
        try alsaCall("snd_pcm_sw_params", device: name) { musickit_snd_pcm_sw_params(pcm, sw) }

        return PCMConfiguration(sampleRate: Int(rate), channelCount: request.channelCount,
                                sampleFormat: format, periodSizeInFrames: Int(periodSize),
                                bufferSizeInFrames: Int(bufferSize), canPause: canPause)
    }

    // MARK: Real-time operations (called on the audio thread)

    /// Writes interleaved frames; returns the frames accepted, or a negative errno
    /// (-EAGAIN when full, -EPIPE on underrun, -ESTRPIPE when suspended).
    @inline(__always)
    func write(_ bytes: UnsafeRawPointer, frameCount: Int) -> Int {
        Int(musickit_snd_pcm_writei(handle, bytes, snd_pcm_uframes_t(frameCount)))
    }

    /// Frames the application may write now, or a negative errno.
    @inline(__always)
    func availableFrames() -> Int { Int(musickit_snd_pcm_avail_update(handle)) }

    /// Frames written but not yet played, or a negative errno.
    @inline(__always)
    func delayFrames() -> Int {
        var delay: snd_pcm_sframes_t = 0
        let result = musickit_snd_pcm_delay(handle, &delay)
        return result < 0 ? Int(result) : Int(delay)
    }

    /// Starts the device, or finds it started by the write of its first period (the start
    /// threshold, `configure`).
    @inline(__always) func start() -> Int32 {
        if musickit_snd_pcm_state(handle) == SND_PCM_STATE_RUNNING { return 0 }
        return musickit_snd_pcm_start(handle)
    }
    /// Stops at once, discarding what the device holds.
    @inline(__always) func drop() -> Int32 { musickit_snd_pcm_drop(handle) }
    @inline(__always) func prepare() -> Int32 { musickit_snd_pcm_prepare(handle) }
    @inline(__always) func pause(_ enable: Bool) -> Int32 { musickit_snd_pcm_pause(handle, enable ? 1 : 0) }
    /// Recovers from -EPIPE (xrun) or -ESTRPIPE (suspend); the stream is prepared afterwards.
    @inline(__always) func recover(from error: Int32) -> Int32 { musickit_snd_pcm_recover(handle, error, 1) }

    /// The playback device names ALSA knows, for error messages.
    static func availableDeviceNames() -> [String] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard musickit_alsa_load() == nil, musickit_snd_device_name_hint(-1, "pcm", &hints) == 0, let hints else { return [] }
        defer { musickit_snd_device_name_free_hint(hints) }
        var names: [String] = []
        var cursor = hints
        while let hint = cursor.pointee {
            if let name = musickit_snd_device_name_get_hint(hint, "NAME") {
                let ioid = musickit_snd_device_name_get_hint(hint, "IOID")
                let isCaptureOnly = ioid.map { String(cString: $0) == "Input" } ?? false
                if !isCaptureOnly { names.append(String(cString: name)) }
                free(name)
                free(ioid)
            }
            cursor += 1
        }
        return names
    }

    /// What to check when `device` could not be opened with `code`.
    static func openFailureHint(code: Int32, device: String) -> String {
        let server = AudioOutputs.pulseServerSetting
        switch -code {
        case ECONNREFUSED, EHOSTDOWN, ECONNRESET:
            return "The sound server could not be reached: is PulseAudio or PipeWire running for this user "
                + "(`pactl info`)? \(server). " + availableDevicesHint()
        case ENOENT where device == "default" || device == "pulse" || device == "pipewire":
            return "Neither a sound server nor a sound card answered: is PulseAudio or PipeWire running for this "
                + "user (`pactl info`), is there a sound card (`aplay -l`)? \(server). " + availableDevicesHint()
        case EBUSY:
            return "Another program holds the device; a sound server shares it (--device default). " + availableDevicesHint()
        default:
            return availableDevicesHint()
        }
    }

    static func availableDevicesHint() -> String {
        let names = availableDeviceNames()
        let listed = names.isEmpty ? "none found" : names.prefix(12).joined(separator: ", ")
        return "Pick another device with --device NAME (playback devices ALSA knows: \(listed); "
            + "`aplay -L` lists them all)"
    }
}
