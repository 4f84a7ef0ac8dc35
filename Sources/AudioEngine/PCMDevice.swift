import Glibc

/// The output the audio thread writes to: an ALSA PCM (`ALSAPCM`, any name ALSA knows), or a
/// stream on a PulseAudio/PipeWire server through libpulse (`PulseStream`, for `pulseaudio` and
/// `pulseaudio:SINK`), which skips ALSA's configuration and pulse plugin (~2 ms of CPU less to
/// open, and a skip flushes the open stream instead of making a new one).
///
/// Both behave as a PCM that never starts by itself: frames written while stopped wait for
/// `start()`, `drop()` discards what the device holds, `prepare()` readies a dropped device.
/// Thread safety: opened on one thread, then used by the audio thread alone.
final class PCMDevice: @unchecked Sendable {
    private enum Output {
        case alsa(ALSAPCM)
        case pulse(PulseStream)
    }

    let name: String
    let configuration: PCMConfiguration
    /// The device's poll descriptors, followed by one free slot for the caller's wake-up descriptor.
    let pollDescriptors: UnsafeMutablePointer<pollfd>
    let pollDescriptorCount: Int
    /// Whether `prepare()` on a running stream discards what it holds, so a skip needs no
    /// `drop()` first (ALSA's external plugins, such as PulseAudio's, and the native stream).
    let prepareDiscardsPlayback: Bool
    private let output: Output

    /// Opens and configures `name` for playback.
    init(name: String, request: PCMRequest) throws(ALSAError) {
        self.name = name
        if PulseStream.isPulseAudioName(name) {
            let stream = try PulseStream(name: name, request: request)
            output = .pulse(stream)
            configuration = stream.configuration
            pollDescriptorCount = stream.pollDescriptorCount
            pollDescriptors = stream.pollDescriptors
            prepareDiscardsPlayback = true
        } else {
            let pcm = try ALSAPCM(name: name, request: request)
            output = .alsa(pcm)
            configuration = pcm.configuration
            pollDescriptorCount = pcm.pollDescriptorCount
            pollDescriptors = pcm.pollDescriptors
            prepareDiscardsPlayback = pcm.prepareDiscardsPlayback
        }
    }

    deinit {
        // libpulse's thread is joined here, on the thread that lets the device go, before the
        // stream's last reference goes (see `PulseStream.shutDown`).
        if case .pulse(let stream) = output { stream.shutDown() }
    }

    /// Opens `name`, or `fallback` when `name` cannot be opened and there is one; when neither
    /// opens, `name`'s error.
    static func open(_ name: String, fallback: String?, request: PCMRequest) throws(ALSAError) -> PCMDevice {
        do {
            return try PCMDevice(name: name, request: request)
        } catch {
            guard let fallback, fallback != name, let device = try? PCMDevice(name: fallback, request: request) else { throw error }
            return device
        }
    }

    /// Where the sound server is looked for, for messages about a server that did not answer.
    static var pulseServerSetting: String {
        getenv("PULSE_SERVER").map { "PULSE_SERVER is \(String(cString: $0))" } ?? "PULSE_SERVER is not set"
    }

    // MARK: Real-time operations (called on the audio thread)

    /// Writes interleaved frames; returns the frames accepted, or a negative errno
    /// (-EAGAIN when full, -EPIPE after an underrun, -ESTRPIPE when suspended).
    @inline(__always)
    func write(_ bytes: UnsafeRawPointer, frameCount: Int) -> Int {
        switch output {
        case .alsa(let pcm): pcm.write(bytes, frameCount: frameCount)
        case .pulse(let stream): stream.write(bytes, frameCount: frameCount)
        }
    }

    /// Frames the application may write now, or a negative errno.
    @inline(__always)
    func availableFrames() -> Int {
        switch output {
        case .alsa(let pcm): pcm.availableFrames()
        case .pulse(let stream): stream.availableFrames()
        }
    }

    /// Frames written but not yet played, or a negative errno.
    @inline(__always)
    func delayFrames() -> Int {
        switch output {
        case .alsa(let pcm): pcm.delayFrames()
        case .pulse(let stream): stream.delayFrames()
        }
    }

    @inline(__always) func start() -> Int32 {
        switch output {
        case .alsa(let pcm): pcm.start()
        case .pulse(let stream): stream.start()
        }
    }

    /// Stops at once, discarding what the device holds.
    @inline(__always) func drop() -> Int32 {
        switch output {
        case .alsa(let pcm): pcm.drop()
        case .pulse(let stream): stream.drop()
        }
    }

    /// Readies a dropped device for writing; on a running stream whose `prepareDiscardsPlayback`,
    /// also discards what it holds (the native stream: its next write goes into its spare stream,
    /// or over what it holds; see `PulseStream`).
    @inline(__always) func prepare() -> Int32 {
        switch output {
        case .alsa(let pcm): pcm.prepare()
        case .pulse(let stream): stream.prepare()
        }
    }

    @inline(__always) func pause(_ enable: Bool) -> Int32 {
        switch output {
        case .alsa(let pcm): pcm.pause(enable)
        case .pulse(let stream): stream.pause(enable)
        }
    }

    /// Recovers from -EPIPE (underrun) or -ESTRPIPE (suspend); the device is prepared afterwards.
    @inline(__always) func recover(from error: Int32) -> Int32 {
        switch output {
        case .alsa(let pcm): pcm.recover(from: error)
        case .pulse(let stream): error == -EPIPE ? stream.recoverFromUnderflow() : error
        }
    }
}
