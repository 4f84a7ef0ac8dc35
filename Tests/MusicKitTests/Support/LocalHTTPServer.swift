import Foundation
import Glibc
@testable import MusicKitCore
import Synchronization

/// Tokens a test server can recognise ("developer-token-for-tests", and `user` when given).
final class TestTokens: MusicUserTokenProvider, MusicDeveloperTokenProvider, @unchecked Sendable {
    // @unchecked: immutable.
    let user: String?

    init(user: String?) {
        self.user = user
        super.init()
    }

    func developerToken(options: MusicTokenRequestOptions) async throws -> String { "developer-token-for-tests" }

    override func userToken(for developerToken: String, options: MusicTokenRequestOptions) async throws -> String {
        guard let user else { throw MusicTokenRequestError.userNotSignedIn }
        return user
    }
}

/// An HTTP/1.1 server on 127.0.0.1 (a port of its own) that answers every request with what
/// `respond` returns and records what it was sent: the Apple Music API, played by the tests.
final class LocalHTTPServer: @unchecked Sendable {
    // @unchecked: `requests` is in a Mutex; the listener is closed once.
    struct Request: Sendable {
        let method: String
        let target: String
        let headers: [String: String]  // names lowercased

        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    struct Answer: Sendable {
        var status = 200
        var headers: [String: String] = ["Content-Type": "application/json"]
        var body = Data()
        /// Sent in chunks (Transfer-Encoding: chunked) instead of with a Content-Length.
        var chunked = false
        /// Accept the request and never answer.
        var silent = false
        /// Send the body this many bytes at a time, waiting `interval` between (a slow network).
        var pace: (bytes: Int, interval: TimeInterval)?
        /// Instead of an answer, these bytes over and over, `interval` apart, until the client
        /// closes the connection (a hostile server: endless interim answers, endless headers).
        var endless: (bytes: Data, interval: TimeInterval)?
    }

    let port: UInt16
    private let listener: Int32
    private let recorded = Mutex<[Request]>([])
    private let respond: @Sendable (Request) -> Answer

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    var requests: [Request] { recorded.withLock { $0 } }
    /// When each answer's last byte was sent, in the order they finished.
    var answersFinished: [Date] { finished.withLock { $0 } }
    private let finished = Mutex<[Date]>([])

    init(respond: @escaping @Sendable (Request) -> Answer) throws {
        self.respond = respond
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard descriptor >= 0, bound == 0, listen(descriptor, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        listener = descriptor
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [weak self] in self?.serve() }
        thread.start()
    }

    private let stopped = Mutex(false)

    /// Stops listening (once; later calls do nothing).
    func stop() {
        guard !stopped.withLock({ state in defer { state = true }; return state }) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    deinit { stop() }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            Thread.detachNewThread { [self] in
                defer { close(connection) }
                guard let request = readRequest(connection) else { return }
                recorded.withLock { $0.append(request) }
                let answer = respond(request)
                if let endless = answer.endless {
                    while endless.bytes.withUnsafeBytes({ send(connection, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }) > 0 {
                        if endless.interval > 0 { Thread.sleep(forTimeInterval: endless.interval) }
                    }
                    return
                }
                if answer.silent {
                    var byte: UInt8 = 0
                    _ = recv(connection, &byte, 1, 0)  // until the client gives up and closes
                    return
                }
                var head = "HTTP/1.1 \(answer.status) Status\r\n"
                for (name, value) in answer.headers { head += "\(name): \(value)\r\n" }
                var body = answer.body
                if answer.chunked {
                    head += "Transfer-Encoding: chunked\r\n"
                    var chunks = Data()
                    var offset = 0
                    while offset < answer.body.count {
                        let size = min(7, answer.body.count - offset)  // small chunks, so that many are read
                        chunks.append(Data(String(size, radix: 16).utf8) + Data("\r\n".utf8))
                        chunks.append(answer.body[offset..<offset + size])
                        chunks.append(Data("\r\n".utf8))
                        offset += size
                    }
                    body = chunks + Data("0\r\n\r\n".utf8)
                } else {
                    head += "Content-Length: \(body.count)\r\n"
                }
                let headBytes = Data((head + "Connection: close\r\n\r\n").utf8)
                let pieces: [Data] = answer.pace.map { pace in
                    stride(from: 0, to: body.count, by: pace.bytes).map { body[$0..<min($0 + pace.bytes, body.count)] }
                } ?? [body]
                for (index, piece) in ([headBytes] + pieces).enumerated() {
                    if index > 1, let pace = answer.pace { Thread.sleep(forTimeInterval: pace.interval) }
                    let delivered = piece.withUnsafeBytes { buffer in
                        var offset = 0
                        while offset < buffer.count {
                            let sent = send(connection, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                            if sent <= 0 { return false }
                            offset += sent
                        }
                        return true
                    }
                    if !delivered { return }
                }
                finished.withLock { $0.append(Date()) }
            }
        }
    }

    private func readRequest(_ connection: Int32) -> Request? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while !String(decoding: bytes, as: UTF8.self).contains("\r\n\r\n") {
            let count = recv(connection, &chunk, chunk.count, 0)
            guard count > 0 else { return nil }
            bytes += chunk[0..<count]
        }
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = lines[0].split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where line.contains(":") {
            let colon = line.firstIndex(of: ":")!
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Request(method: String(requestLine[0]), target: String(requestLine[1]), headers: headers)
    }
}
