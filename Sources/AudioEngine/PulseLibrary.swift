import PlatformSupport
import CPulse
import Glibc

// The one wrapper around libpulse (CPulse), as MPD's lib/pulse is beside its output plugin: the
// function table, the error, the connection (PulseConnection.swift); the output built on them is
// `PulseStream` (PulseStream.swift), for the `pulseaudio` and `pulseaudio:SINK` devices.
// PipeWire serves the same protocol (pipewire-pulse). libpulse is opened when the first such
// device is (see DynamicLibrary), not at start.

/// libpulse's functions the engine calls.
struct LibPulse: @unchecked Sendable {
    // @unchecked: a table of C function pointers, written once.
    typealias Mainloop = OpaquePointer
    typealias Context = OpaquePointer
    typealias Stream = OpaquePointer
    typealias Operation = OpaquePointer
    typealias ContextCallback = @convention(c) (Context?, UnsafeMutableRawPointer?) -> Void
    typealias StreamCallback = @convention(c) (Stream?, UnsafeMutableRawPointer?) -> Void
    typealias StreamRequestCallback = @convention(c) (Stream?, Int, UnsafeMutableRawPointer?) -> Void
    typealias SubscribeCallback = @convention(c) (Context?, pa_subscription_event_type_t, UInt32, UnsafeMutableRawPointer?) -> Void
    typealias SinkInputInfoCallback = @convention(c) (Context?, UnsafePointer<pa_sink_input_info>?, Int32, UnsafeMutableRawPointer?) -> Void
    typealias SinkInfoCallback = @convention(c) (Context?, UnsafePointer<pa_sink_info>?, Int32, UnsafeMutableRawPointer?) -> Void
    typealias TimeEvent = OpaquePointer
    typealias TimeEventCallback = @convention(c) (UnsafeMutablePointer<pa_mainloop_api>?, TimeEvent?, UnsafePointer<timeval>?,
                                                  UnsafeMutableRawPointer?) -> Void

    let mainloopNew: @convention(c) () -> Mainloop?
    let mainloopAPI: @convention(c) (Mainloop?) -> UnsafeMutablePointer<pa_mainloop_api>?
    let mainloopStart: @convention(c) (Mainloop?) -> Int32
    let mainloopStop: @convention(c) (Mainloop?) -> Void
    let mainloopFree: @convention(c) (Mainloop?) -> Void
    let mainloopLock: @convention(c) (Mainloop?) -> Void
    let mainloopUnlock: @convention(c) (Mainloop?) -> Void
    let mainloopWait: @convention(c) (Mainloop?) -> Void
    let mainloopSignal: @convention(c) (Mainloop?, Int32) -> Void
    let mainloopInThread: @convention(c) (Mainloop?) -> Int32
    let contextNew: @convention(c) (UnsafeMutablePointer<pa_mainloop_api>?, UnsafePointer<CChar>?) -> Context?
    let contextSetStateCallback: @convention(c) (Context?, ContextCallback?, UnsafeMutableRawPointer?) -> Void
    let contextConnect: @convention(c) (Context?, UnsafePointer<CChar>?, pa_context_flags_t, UnsafeRawPointer?) -> Int32
    let contextState: @convention(c) (Context?) -> pa_context_state_t
    let contextErrno: @convention(c) (Context?) -> Int32
    let contextDisconnect: @convention(c) (Context?) -> Void
    let contextUnref: @convention(c) (Context?) -> Void
    let contextTimerNew: @convention(c) (Context?, UInt64, TimeEventCallback?, UnsafeMutableRawPointer?) -> TimeEvent?
    let contextTimerRestart: @convention(c) (Context?, TimeEvent?, UInt64) -> Void
    let monotonicMicroseconds: @convention(c) () -> UInt64
    let streamNew: @convention(c) (Context?, UnsafePointer<CChar>?, UnsafePointer<pa_sample_spec>?, UnsafeRawPointer?) -> Stream?
    let streamSetStateCallback: @convention(c) (Stream?, StreamCallback?, UnsafeMutableRawPointer?) -> Void
    let streamSetWriteCallback: @convention(c) (Stream?, StreamRequestCallback?, UnsafeMutableRawPointer?) -> Void
    let streamSetUnderflowCallback: @convention(c) (Stream?, StreamCallback?, UnsafeMutableRawPointer?) -> Void
    let streamSetStartedCallback: @convention(c) (Stream?, StreamCallback?, UnsafeMutableRawPointer?) -> Void
    let streamConnectPlayback: @convention(c) (Stream?, UnsafePointer<CChar>?, UnsafePointer<pa_buffer_attr>?,
                                               pa_stream_flags_t, UnsafeRawPointer?, Stream?) -> Int32
    let streamState: @convention(c) (Stream?) -> pa_stream_state_t
    let streamWritableSize: @convention(c) (Stream?) -> Int
    let streamWrite: @convention(c) (Stream?, UnsafeRawPointer?, Int, (@convention(c) (UnsafeMutableRawPointer?) -> Void)?,
                                     Int64, pa_seek_mode_t) -> Int32
    let streamCork: @convention(c) (Stream?, Int32, UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Operation?
    let streamFlush: @convention(c) (Stream?, UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Operation?
    let streamTrigger: @convention(c) (Stream?, UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Operation?
    let streamLatency: @convention(c) (Stream?, UnsafeMutablePointer<UInt64>?, UnsafeMutablePointer<Int32>?) -> Int32
    let streamUpdateTimingInfo: @convention(c) (Stream?, UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Operation?
    let streamBufferAttributes: @convention(c) (Stream?) -> UnsafePointer<pa_buffer_attr>?
    let streamIndex: @convention(c) (Stream?) -> UInt32
    let streamDeviceIndex: @convention(c) (Stream?) -> UInt32
    let streamDeviceName: @convention(c) (Stream?) -> UnsafePointer<CChar>?
    let streamDisconnect: @convention(c) (Stream?) -> Int32
    let streamUnref: @convention(c) (Stream?) -> Void
    let streamSetName: @convention(c) (Stream?, UnsafePointer<CChar>?, UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Operation?
    let contextSetSubscribeCallback: @convention(c) (Context?, SubscribeCallback?, UnsafeMutableRawPointer?) -> Void
    let contextSubscribe: @convention(c) (Context?, pa_subscription_mask_t, UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Operation?
    let contextSinkInputInfo: @convention(c) (Context?, UInt32, SinkInputInfoCallback?, UnsafeMutableRawPointer?) -> Operation?
    let contextSinkInfoByName: @convention(c) (Context?, UnsafePointer<CChar>?, SinkInfoCallback?, UnsafeMutableRawPointer?) -> Operation?
    let contextSetSinkInputVolume: @convention(c) (Context?, UInt32, UnsafePointer<pa_cvolume>?, UnsafeRawPointer?,
                                                   UnsafeMutableRawPointer?) -> Operation?
    let cvolumeSet: @convention(c) (UnsafeMutablePointer<pa_cvolume>?, UInt32, UInt32) -> UnsafeMutablePointer<pa_cvolume>?
    let cvolumeAverage: @convention(c) (UnsafePointer<pa_cvolume>?) -> UInt32
    let cvolumeEqual: @convention(c) (UnsafePointer<pa_cvolume>?, UnsafePointer<pa_cvolume>?) -> Int32
    let contextSetSinkInputMute: @convention(c) (Context?, UInt32, Int32, UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Operation?
    let contextMoveSinkInput: @convention(c) (Context?, UInt32, UInt32, UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Operation?
    let operationUnref: @convention(c) (Operation?) -> Void
    let errorText: @convention(c) (Int32) -> UnsafePointer<CChar>?

    static let loaded: Result<LibPulse, DynamicLibrary.Failure> =
        DynamicLibrary.table("libpulse.so.0") { function throws(DynamicLibrary.Failure) in
            LibPulse(
                mainloopNew: try function("pa_threaded_mainloop_new"),
                mainloopAPI: try function("pa_threaded_mainloop_get_api"),
                mainloopStart: try function("pa_threaded_mainloop_start"),
                mainloopStop: try function("pa_threaded_mainloop_stop"),
                mainloopFree: try function("pa_threaded_mainloop_free"),
                mainloopLock: try function("pa_threaded_mainloop_lock"),
                mainloopUnlock: try function("pa_threaded_mainloop_unlock"),
                mainloopWait: try function("pa_threaded_mainloop_wait"),
                mainloopSignal: try function("pa_threaded_mainloop_signal"),
                mainloopInThread: try function("pa_threaded_mainloop_in_thread"),
                contextNew: try function("pa_context_new"),
                contextSetStateCallback: try function("pa_context_set_state_callback"),
                contextConnect: try function("pa_context_connect"),
                contextState: try function("pa_context_get_state"),
                contextErrno: try function("pa_context_errno"),
                contextDisconnect: try function("pa_context_disconnect"),
                contextUnref: try function("pa_context_unref"),
                contextTimerNew: try function("pa_context_rttime_new"),
                contextTimerRestart: try function("pa_context_rttime_restart"),
                monotonicMicroseconds: try function("pa_rtclock_now"),
                streamNew: try function("pa_stream_new"),
                streamSetStateCallback: try function("pa_stream_set_state_callback"),
                streamSetWriteCallback: try function("pa_stream_set_write_callback"),
                streamSetUnderflowCallback: try function("pa_stream_set_underflow_callback"),
                streamSetStartedCallback: try function("pa_stream_set_started_callback"),
                streamConnectPlayback: try function("pa_stream_connect_playback"),
                streamState: try function("pa_stream_get_state"),
                streamWritableSize: try function("pa_stream_writable_size"),
                streamWrite: try function("pa_stream_write"),
                streamCork: try function("pa_stream_cork"),
                streamFlush: try function("pa_stream_flush"),
                streamTrigger: try function("pa_stream_trigger"),
                streamLatency: try function("pa_stream_get_latency"),
                streamUpdateTimingInfo: try function("pa_stream_update_timing_info"),
                streamBufferAttributes: try function("pa_stream_get_buffer_attr"),
                streamIndex: try function("pa_stream_get_index"),
                streamDeviceIndex: try function("pa_stream_get_device_index"),
                streamDeviceName: try function("pa_stream_get_device_name"),
                streamDisconnect: try function("pa_stream_disconnect"),
                streamUnref: try function("pa_stream_unref"),
                streamSetName: try function("pa_stream_set_name"),
                contextSetSubscribeCallback: try function("pa_context_set_subscribe_callback"),
                contextSubscribe: try function("pa_context_subscribe"),
                contextSinkInputInfo: try function("pa_context_get_sink_input_info"),
                contextSinkInfoByName: try function("pa_context_get_sink_info_by_name"),
                contextSetSinkInputVolume: try function("pa_context_set_sink_input_volume"),
                cvolumeSet: try function("pa_cvolume_set"), cvolumeAverage: try function("pa_cvolume_avg"),
                cvolumeEqual: try function("pa_cvolume_equal"),
                contextSetSinkInputMute: try function("pa_context_set_sink_input_mute"),
                contextMoveSinkInput: try function("pa_context_move_sink_input_by_index"),
                operationUnref: try function("pa_operation_unref"),
                errorText: try function("pa_strerror"))
        }

    /// `code` (a `pa_error_code`) for `operation` on `device`, in libpulse's words, with what to
    /// check when there is something to say.
    func error(_ operation: String, code: Int32, device: String) -> PulseError {
        let message = errorText(code).map { String(cString: $0) } ?? "error \(code)"
        var hint: String?
        if code == PA_ERR_CONNECTIONREFUSED.rawValue || code == PA_ERR_INVALIDSERVER.rawValue {
            hint = "Is PulseAudio or PipeWire running for this user (`pactl info`)? \(AudioOutputs.pulseServerSetting)"
        } else if code == PA_ERR_NOENTITY.rawValue {
            hint = "`pactl list short sinks` lists the sinks (--device pulseaudio:SINK)"
        }
        return PulseError(operation: operation, code: code, device: device, message: message, hint: hint)
    }
}

/// A failed libpulse call: which operation, on which device, libpulse's error code and words.
public struct PulseError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The C function that failed, e.g. `pa_stream_connect_playback`.
    public let operation: String
    /// libpulse's error code (`pa_error_code`: `PA_ERR_NOENTITY` is 5).
    public let code: Int32
    /// The device name (`pulseaudio`, `pulseaudio:SINK`).
    public let device: String
    /// libpulse's words for `code` (`pa_strerror`), or why libpulse could not be loaded.
    public let message: String
    /// What to do about it, when there is something to say.
    public let hint: String?

    public var description: String {
        var text = "PulseAudio \(operation) on device '\(device)' failed: \(message) (\(code))"
        if let hint { text += ". \(hint)" }
        return text
    }
}

extension PCMSampleFormat {
    var pulseFormat: pa_sample_format_t {
        switch self {
        case .int16: PA_SAMPLE_S16LE
        case .int32: PA_SAMPLE_S32LE
        case .float32: PA_SAMPLE_FLOAT32LE
        }
    }
}
