import AudioMeasurement
import AudioTestSupport
import Foundation
import Synchronization
import MusicKit
@testable import MusicKitCore
import XCTest

/// `MusicDataRequest` against servers the tests start: a local HTTP server playing the Apple
/// Music API (real responses from Fixtures/), and a TLS server (Python's, with a certificate
/// made here by `openssl`) for HTTPS and its certificate checks.
final class MusicDataRequestTests: XCTestCase {
    private var server: LocalHTTPServer?

    override func setUpWithError() throws {
        _ = try useTemporaryEnvironment(self)
        MusicDataRequest.tokenProvider = TestTokens(user: "user-token-for-tests")
        // Retries as in use, with backoffs short enough for a test.
        MusicDataRequest.retryPolicy = MusicDataRequest.RetryPolicy(retries: 3, firstBackoff: 0.01, longestWait: 30)
    }

    override func tearDown() {
        server?.stop()
        MusicDataRequest.tokenProvider = DefaultMusicTokenProvider()
        MusicDataRequest.retryPolicy = MusicDataRequest.RetryPolicy()
        unsetenv("MUSICKIT_API_BASE_URL")
        unsetenv("MUSICKIT_CA_FILE")
    }

    private func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: XCTUnwrap(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil)))
    }

    private func serve(_ respond: @escaping @Sendable (LocalHTTPServer.Request) -> LocalHTTPServer.Answer) throws -> LocalHTTPServer {
        let server = try LocalHTTPServer(respond: respond)
        self.server = server
        return server
    }

    func testTheAnswerIsTheServersBodyAndTheDeveloperTokenIsSent() async throws {
        let body = try fixture("song-897072750-us.json")
        let server = try serve { _ in LocalHTTPServer.Answer(body: body) }
        let url = server.baseURL.appendingPathComponent("v1/catalog/us/songs/897072750")
        let response = try await MusicDataRequest(urlRequest: URLRequest(url: url)).response()

        XCTAssertEqual(response.data, body, "the body as sent")
        XCTAssertEqual(response.urlResponse.statusCode, 200)
        XCTAssertEqual(response.urlResponse.mimeType, "application/json")
        let songs = try JSONDecoder().decode(MusicItemCollection<Song>.self, from: response.data)
        XCTAssertEqual(songs.first?.id, "897072750", "decodes as an app would decode it")
        let request = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(request.method, "GET")
        XCTAssertEqual(request.target, "/v1/catalog/us/songs/897072750")
        XCTAssertEqual(request.header("Authorization"), "Bearer developer-token-for-tests")
        XCTAssertNil(request.header("Music-User-Token"), "a catalog request does not carry the user's token")
        XCTAssertFalse(response.description.contains("developer-token"), "no token in what is printed")
    }

    /// The tokens go only to the origin they were made for: a redirect to another host, port
    /// or scheme (an API that sends the client elsewhere, https → http) loses them; one within
    /// the origin keeps them (issue #42: every header followed every redirect).
    func testARedirectToAnotherOriginDoesNotCarryTheTokens() async throws {
        let elsewhere = try LocalHTTPServer(respond: { _ in LocalHTTPServer.Answer(body: Data(#"{"data":[]}"#.utf8)) })
        defer { elsewhere.stop() }
        let server = try serve { request in
            if request.target.hasPrefix("/v1/me/away") {
                return LocalHTTPServer.Answer(status: 302, headers: ["Location": elsewhere.baseURL.appendingPathComponent("v1/x").absoluteString])
            }
            if request.target.hasPrefix("/v1/me/here") {
                return LocalHTTPServer.Answer(status: 307, headers: ["Location": "/v1/me/there"])
            }
            return LocalHTTPServer.Answer(body: Data(#"{"data":[]}"#.utf8))
        }
        _ = try await MusicDataRequest(urlRequest: URLRequest(url: server.baseURL.appendingPathComponent("v1/me/away"))).response()
        let redirected = try XCTUnwrap(elsewhere.requests.first, "the redirect was followed")
        XCTAssertNil(redirected.header("Authorization"), "no developer token to another origin")
        XCTAssertNil(redirected.header("Music-User-Token"), "no user token to another origin")
        XCTAssertEqual(server.requests.first?.header("Music-User-Token"), "user-token-for-tests", "the first request had it")

        _ = try await MusicDataRequest(urlRequest: URLRequest(url: server.baseURL.appendingPathComponent("v1/me/here"))).response()
        let within = try XCTUnwrap(server.requests.last)
        XCTAssertEqual(within.target, "/v1/me/there")
        XCTAssertEqual(within.header("Authorization"), "Bearer developer-token-for-tests", "within the origin, kept")

        XCTAssertFalse(HTTPClient.isSameOrigin(URL(string: "https://api.music.apple.com/v1")!, URL(string: "http://api.music.apple.com/v1")!))
        XCTAssertTrue(HTTPClient.isSameOrigin(URL(string: "https://API.music.apple.com:443/a")!, URL(string: "https://api.music.apple.com/b")!))
    }

    func testPersonalEndpointsCarryTheUserTokenAndQueriesArriveEncoded() async throws {
        let server = try serve { _ in LocalHTTPServer.Answer(body: Data(#"{"data":[]}"#.utf8)) }
        var components = URLComponents(url: server.baseURL.appendingPathComponent("v1/me/library/songs"), resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "filter[title]", value: "Ça va & co")]
        var urlRequest = URLRequest(url: components.url!)
        urlRequest.setValue("fr-FR", forHTTPHeaderField: "Accept-Language")
        _ = try await MusicDataRequest(urlRequest: urlRequest).response()

        let request = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(request.header("Music-User-Token"), "user-token-for-tests")
        XCTAssertEqual(request.header("Accept-Language"), "fr-FR", "the app's own header fields are sent")
        XCTAssertEqual(request.target, "/v1/me/library/songs?" + components.percentEncodedQuery!)

        MusicDataRequest.tokenProvider = TestTokens(user: nil)
        do {
            _ = try await MusicDataRequest(urlRequest: urlRequest).response()
            XCTFail("a personal request without a user token must fail")
        } catch let error as MusicTokenRequestError {
            XCTAssertEqual(error, .userNotSignedIn)
        }
        XCTAssertEqual(server.requests.count, 1, "nothing sent without the token")
    }

    func testAnErrorAnswerThrowsTheAPIsErrorWithTheResponse() async throws {
        let body = try fixture("error-40005-invalid-language-tag.json")
        let server = try serve { _ in LocalHTTPServer.Answer(status: 400, body: body) }
        let url = URL(string: "\(server.baseURL)/v1/catalog/us/songs/1?l=zh-tw")!
        do {
            _ = try await MusicDataRequest(urlRequest: URLRequest(url: url)).response()
            XCTFail("a 400 must throw")
        } catch let error as MusicDataRequest.Error {
            XCTAssertEqual(error.status, 400)
            XCTAssertEqual(error.code, 40005)
            XCTAssertEqual(error.title, "Invalid Parameter Value")
            XCTAssertEqual(error.detailText, "Invalid language tag 'zh-tw'")
            XCTAssertEqual(error.id, "ID")
            XCTAssertEqual(error.source, .parameter("l"))
            XCTAssertEqual(error.originalResponse.urlResponse.statusCode, 400)
            XCTAssertEqual(error.originalResponse.data, body)
        }

        // A status without an errors document still throws, with the status's reason.
        server.stop()
        let bare = try serve { _ in LocalHTTPServer.Answer(status: 503, headers: ["Content-Type": "text/html"], body: Data("<h1>down</h1>".utf8)) }
        do {
            _ = try await MusicDataRequest(urlRequest: URLRequest(url: bare.baseURL.appendingPathComponent("v1/test"))).response()
            XCTFail("a 503 must throw")
        } catch let error as MusicDataRequest.Error {
            XCTAssertEqual(error.status, 503)
            XCTAssertEqual(error.code, 0)
            XCTAssertEqual(error.title, "Service Unavailable")
        }
        XCTAssertEqual(bare.requests.count, 4, "a 5xx is tried again three times, then thrown")
    }

    /// The answers a server gives in turn, then the last one again.
    private func serveInTurn(_ answers: [LocalHTTPServer.Answer]) throws -> LocalHTTPServer {
        final class Turn: Sendable { let count = Mutex(0) }
        let turn = Turn()
        return try serve { _ in
            answers[turn.count.withLock { count in defer { count += 1 }; return min(count, answers.count - 1) }]
        }
    }

    func testServerErrorsAreRetriedWithBackoffOnlyForRequestsThatCanBeRepeated() async throws {
        let body = try fixture("song-897072750-us.json")
        let flaky = try serveInTurn([LocalHTTPServer.Answer(status: 502), LocalHTTPServer.Answer(status: 500),
                                     LocalHTTPServer.Answer(body: body)])
        let response = try await MusicDataRequest(urlRequest: URLRequest(url: flaky.baseURL.appendingPathComponent("v1/x"))).response()
        XCTAssertEqual(response.data, body, "the answer after two server errors")
        XCTAssertEqual(flaky.requests.count, 3)

        // A POST may have been carried out before the server failed: not sent twice.
        flaky.stop()
        let failing = try serveInTurn([LocalHTTPServer.Answer(status: 503)])
        var post = URLRequest(url: failing.baseURL.appendingPathComponent("v1/me/library"))
        post.httpMethod = "POST"
        do {
            _ = try await MusicDataRequest(urlRequest: post).response()
            XCTFail("a 503 must throw")
        } catch let error as MusicDataRequest.Error {
            XCTAssertEqual(error.status, 503)
        }
        XCTAssertEqual(failing.requests.count, 1, "a POST is not retried")

        // A 4xx is the request's fault: never retried.
        failing.stop()
        let notFound = try serveInTurn([LocalHTTPServer.Answer(status: 404, body: try fixture("error-40400-resource-not-found.json"))])
        do {
            _ = try await MusicDataRequest(urlRequest: URLRequest(url: notFound.baseURL.appendingPathComponent("v1/x"))).response()
            XCTFail("a 404 must throw")
        } catch let error as MusicDataRequest.Error {
            XCTAssertEqual(error.code, 40400)
        }
        XCTAssertEqual(notFound.requests.count, 1)
    }

    func testTooManyRequestsWaitsForRetryAfterOrSaysHowLongToWait() async throws {
        let body = try fixture("song-897072750-us.json")
        let limited = try serveInTurn([LocalHTTPServer.Answer(status: 429, headers: ["Retry-After": "1"]),
                                       LocalHTTPServer.Answer(body: body)])
        let started = Date()
        let response = try await MusicDataRequest(urlRequest: URLRequest(url: limited.baseURL.appendingPathComponent("v1/x"))).response()
        XCTAssertEqual(response.data, body)
        XCTAssertEqual(limited.requests.count, 2)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.95, "the second request waited the second Retry-After asked for")

        // Longer than the policy waits: thrown at once, saying when to try again.
        limited.stop()
        let later = Date(timeIntervalSinceNow: 3_600)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let hour = try serveInTurn([LocalHTTPServer.Answer(status: 429, headers: ["Retry-After": formatter.string(from: later)])])
        do {
            _ = try await MusicDataRequest(urlRequest: URLRequest(url: hour.baseURL.appendingPathComponent("v1/x"))).response()
            XCTFail("a 429 must throw")
        } catch let error as MusicDataRequest.Error {
            XCTAssertEqual(error.status, 429)
            let text = try XCTUnwrap(error.errorDescription)
            XCTAssertTrue(text.contains("limiting requests") && text.contains("try again in 3"), text)
        }
        XCTAssertEqual(hour.requests.count, 1, "an hour is not waited for")
    }

    /// A `Retry-After` no clock can reach is a wait longer than any, not a crash (issue #42:
    /// `Retry-After: 9223372036854775807` crashed the CLI).
    func testAnEndlessRetryAfterIsThrownAtOnceAndSaidPlainly() async throws {
        for value in ["9223372036854775807", "99999999999999999999999"] {
            let server = try serveInTurn([LocalHTTPServer.Answer(status: 429, headers: ["Retry-After": value])])
            defer { server.stop() }
            do {
                _ = try await MusicDataRequest(urlRequest: URLRequest(url: server.baseURL.appendingPathComponent("v1/x"))).response()
                XCTFail("a 429 must throw")
            } catch let error as MusicDataRequest.Error {
                let text = try XCTUnwrap(error.errorDescription)
                XCTAssertTrue(text.contains("limiting requests") && text.contains("try again"), text)
            }
            XCTAssertEqual(server.requests.count, 1, "\(value): not waited for")
        }
        XCTAssertNil(MusicDataRequest.RetryPolicy.seconds(retryAfter: "-5"), "not digits, not a date")
    }

    /// A server that answers `100 Continue` for ever, or sends header fields for ever, is
    /// refused once the head passes 64 KiB (issue #42: the interim answers recursed until the
    /// stack overflowed, in the CLI and in the daemon).
    func testEndlessInterimAnswersOrHeadersAreRefusedNotFollowed() async throws {
        // The second repeats a status line (a field without a colon, skipped) and a field.
        let floods = [Data("HTTP/1.1 100 Continue\r\n\r\n".utf8),
                      Data("HTTP/1.1 200 OK\r\nX-Filler: \(String(repeating: "a", count: 200))\r\n".utf8)]
        for (index, flood) in floods.enumerated() {
            let server = try serve { _ in LocalHTTPServer.Answer(endless: (flood, 0)) }
            do {
                _ = try HTTPClient.send(HTTPRequest(url: server.baseURL.appendingPathComponent("v1/x")))
                XCTFail("an endless head must be refused")
            } catch let error as URLError {
                XCTAssertEqual(error.code, .badServerResponse, "flood \(index)")
                XCTAssertTrue("\(error.userInfo)".contains("longer than 65536 bytes"), "flood \(index): \(error.userInfo)")
            }
            server.stop()
        }
    }

    /// A server that drips its answer a byte at a time, each well inside the wait for bytes,
    /// is cut off at the exchange's deadline instead of holding the request for as long as it
    /// likes (issue #42: > 150 s).
    func testAServerThatDripsItsAnswerIsCutOffAtTheDeadline() throws {
        let server = try serve { _ in LocalHTTPServer.Answer(body: Data(repeating: 0x20, count: 10_000), pace: (1, 0.02)) }
        let started = Date()
        do {
            _ = try HTTPClient.send(HTTPRequest(url: server.baseURL.appendingPathComponent("v1/x")), deadline: 0.5)
            XCTFail("the drip must be cut off")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .timedOut)
        }
        let took = Date().timeIntervalSince(started)
        XCTAssertLessThan(took, 10, "cut off near its 0.5 s deadline (the drip alone would take 200 s)")
        XCTAssertEqual(HTTPClient.deadline.answer, 120, "the documented deadline for the API's answers")
    }

    /// Tokens never cross a network in clear text: plain http carries them only to this machine;
    /// elsewhere the request is refused before anything is sent, as Apple's ATS refuses it.
    func testTokensAreNeverSentOverPlainHTTPToAnotherMachine() async throws {
        let started = Date()
        do {
            // 192.0.2.1 is TEST-NET-1: nothing answers there, so a connection attempt would hang.
            _ = try await MusicDataRequest(urlRequest: URLRequest(url: URL(string: "http://192.0.2.1/v1/me/library/songs")!)).response()
            XCTFail("tokens over plain http to another machine must be refused")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .appTransportSecurityRequiresSecureConnection)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "refused before connecting")
        // Without credentials, plain http elsewhere is the caller's business.
        var plain = HTTPRequest(url: URL(string: "http://192.0.2.1/x")!)
        plain.timeoutInterval = 0.2
        XCTAssertThrowsError(try HTTPClient.send(plain)) { XCTAssertNotEqual(($0 as? URLError)?.code, .appTransportSecurityRequiresSecureConnection) }
        for host in ["localhost", "127.0.0.1", "127.8.9.10", "[::1]", "::1"] { XCTAssertTrue(HTTPClient.isLoopback(host), host) }
        for host in ["192.0.2.1", "example.com", "128.0.0.1", "localhost.example.com"] { XCTAssertFalse(HTTPClient.isLoopback(host), host) }
    }

    func testRejectedTokensAreExplainedWithoutShowingThem() async throws {
        let rejected = try serve { request in
            LocalHTTPServer.Answer(status: request.target.hasPrefix("/v1/me") ? 403 : 401, body: Data())
        }
        for (path, expected) in [("v1/catalog/us/songs/1", "the developer token was rejected"),
                                 ("v1/me/library/songs", "the music user token was rejected")] {
            do {
                _ = try await MusicDataRequest(urlRequest: URLRequest(url: rejected.baseURL.appendingPathComponent(path))).response()
                XCTFail("\(path) must throw")
            } catch let error as MusicDataRequest.Error {
                let shown = [error.description, error.errorDescription ?? "", error.originalResponse.debugDescription,
                             "\(error)", String(reflecting: error)].joined(separator: "\n")
                XCTAssertTrue((error.errorDescription ?? "").hasPrefix(expected), shown)
                XCTAssertFalse(shown.contains("developer-token-for-tests") || shown.contains("user-token-for-tests"),
                               "no token in what an error prints: \(shown)")
            }
        }
        XCTAssertEqual(rejected.requests.count, 2, "a rejected token is not retried")
    }

    func testChunkedBodiesAndRedirectsArriveWhole() async throws {
        let body = try fixture("song-900032829-us.json")
        let server = try serve { request in
            request.target == "/old" ? LocalHTTPServer.Answer(status: 302, headers: ["Location": "/new"])
                                     : LocalHTTPServer.Answer(body: body, chunked: true)
        }
        let response = try await MusicDataRequest(urlRequest: URLRequest(url: server.baseURL.appendingPathComponent("old"))).response()
        XCTAssertEqual(response.data, body, "the chunks joined")
        XCTAssertEqual(server.requests.map(\.target), ["/old", "/new"])
        XCTAssertEqual(response.urlResponse.url?.path, "/new")
    }

    func testAServerThatDoesNotAnswerTimesOutAndNoServerCannotBeReached() async throws {
        let server = try serve { _ in LocalHTTPServer.Answer(silent: true) }
        var request = URLRequest(url: server.baseURL.appendingPathComponent("v1/slow"))
        request.timeoutInterval = 0.3
        do {
            _ = try await MusicDataRequest(urlRequest: request).response()
            XCTFail("must time out")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .timedOut)
        }
        let port = server.port
        server.stop()
        do {
            _ = try await MusicDataRequest(urlRequest: URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/x")!)).response()
            XCTFail("nothing listens there")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .cannotConnectToHost)
        }
    }

    /// Code written for Apple platforms spells out the API's address; with
    /// MUSICKIT_API_BASE_URL set it reaches that server instead, path and query unchanged.
    func testRequestsForTheAPIsAddressGoToTheConfiguredServer() async throws {
        let body = try fixture("song-897072750-us.json")
        let server = try serve { _ in LocalHTTPServer.Answer(body: body) }
        setenv("MUSICKIT_API_BASE_URL", server.baseURL.absoluteString, 1)
        let url = URL(string: "https://api.music.apple.com/v1/catalog/us/songs/897072750?l=en-US")!
        let response = try await MusicDataRequest(urlRequest: URLRequest(url: url)).response()
        let songs = try JSONDecoder().decode(MusicItemCollection<Song>.self, from: response.data)
        XCTAssertEqual(songs.first?.title, "Invitation (Live)")
        XCTAssertEqual(server.requests.first?.target, "/v1/catalog/us/songs/897072750?l=en-US")
        XCTAssertEqual(server.requests.first?.header("Authorization"), "Bearer developer-token-for-tests")
    }

    func testCurrentCountryCodeIsTheUsersStorefrontOrTheAccounts() async throws {
        let server = try serve { _ in LocalHTTPServer.Answer(body: Data(#"{"data":[{"id":"gb","type":"storefronts"}]}"#.utf8)) }
        setenv("MUSICKIT_API_BASE_URL", server.baseURL.absoluteString, 1)
        let fromTheAPI = try await MusicDataRequest.currentCountryCode
        XCTAssertEqual(fromTheAPI, "gb")
        XCTAssertEqual(server.requests.first?.target, "/v1/me/storefront")

        MusicDataRequest.tokenProvider = TestTokens(user: nil)
        try MusicAccountSettings.update { $0.storefront = "jp" }
        let fromTheAccount = try await MusicDataRequest.currentCountryCode
        XCTAssertEqual(fromTheAccount, "jp", "no user token: the local account's storefront")
        XCTAssertEqual(server.requests.count, 1)
    }

    /// HTTPS to a server whose certificate was made here: trusted through MUSICKIT_CA_FILE it
    /// answers; not trusted, or for another host name, the request fails before anything is sent.
    func testHTTPSVerifiesTheServersCertificate() async throws {
        let directory = try makeTemporaryDirectory(self)
        let made = try runTool("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                                                    "-nodes", "-keyout", directory.appendingPathComponent("key.pem").path,
                                                    "-out", directory.appendingPathComponent("cert.pem").path, "-days", "1",
                                                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                               environment: [:])
        XCTAssertEqual(made.code, 0, made.out)
        let body = try fixture("song-897072750-us.json")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("www/v1"), withIntermediateDirectories: true)
        try body.write(to: directory.appendingPathComponent("www/v1/song.json"))
        let server = try HTTPFileServer(folder: directory.appendingPathComponent("www"),
                                          certificate: directory.appendingPathComponent("cert.pem"),
                                          key: directory.appendingPathComponent("key.pem"))
        defer { server.stop() }
        let port = server.port
        let url = URL(string: "https://localhost:\(port)/v1/song.json")!

        do {
            _ = try await MusicDataRequest(urlRequest: URLRequest(url: url)).response()
            XCTFail("a certificate nobody trusts must be refused")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .serverCertificateUntrusted, "\(error)")
        }

        setenv("MUSICKIT_CA_FILE", directory.appendingPathComponent("cert.pem").path, 1)
        let response = try await MusicDataRequest(urlRequest: URLRequest(url: url)).response()
        XCTAssertEqual(response.data, body, "trusted: the file, through TLS")

        do {
            _ = try await MusicDataRequest(urlRequest: URLRequest(url: URL(string: "https://127.0.0.1:\(port)/v1/song.json")!)).response()
            XCTFail("a certificate for another host name must be refused")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .serverCertificateUntrusted, "\(error)")
        }
    }
}
