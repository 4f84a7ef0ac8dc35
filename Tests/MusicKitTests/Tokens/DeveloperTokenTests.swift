import AudioMeasurement
import AudioTestSupport
import Foundation
@testable import MusicKitCore
import XCTest

/// Developer tokens signed here (ES256 through libcrypto), checked with the `openssl` command
/// line against the key's public half, and the settings' errors.
final class DeveloperTokenTests: XCTestCase {
    private var environment: MusicKitEnvironment!
    private var directory: URL!

    override func setUpWithError() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") else {
            throw XCTSkip("openssl is not installed (scripts/setup-system installs it)")
        }
        environment = try useTemporaryEnvironment(self)
        directory = try makeTemporaryDirectory(self)
        try FileManager.default.createDirectory(at: environment.configDirectory, withIntermediateDirectories: true)
    }

    @discardableResult
    private func openssl(_ arguments: String...) throws -> (code: Int32, out: String) {
        try runTool("/usr/bin/openssl", arguments, environment: [:])
    }

    /// A new private key in PEM (PKCS#8, as Apple's .p8 files), made by `openssl genpkey`.
    private func makeKey(_ name: String, _ options: String...) throws -> URL {
        let url = directory.appendingPathComponent(name)
        let made = try runTool("/usr/bin/openssl", ["genpkey"] + options + ["-out", url.path], environment: [:])
        XCTAssertEqual(made.code, 0, made.out)
        return url
    }

    private func writeSettings(_ settings: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: settings)
        try data.write(to: environment.configDirectory.appendingPathComponent(MusicDeveloperTokenSettings.fileName))
    }

    private func settingsError(_ settings: [String: Any]) async throws -> MusicDeveloperTokenError {
        try writeSettings(settings)
        do {
            let token = try await DefaultMusicTokenProvider().developerToken(options: [])
            XCTFail("a token was made: \(token)")
        } catch let error as MusicDeveloperTokenError {
            return error
        }
        throw XCTSkip("unreachable")
    }

    /// The DER form (SEQUENCE of two INTEGERs) of JWS's r||s signature, for `openssl dgst`.
    private func der(_ raw: Data) -> Data {
        func integer(_ bytes: Data.SubSequence) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw.prefix(32)) + integer(raw.suffix(32))
        return Data([0x30, UInt8(body.count)] + body)
    }

    private func json(_ part: Substring) throws -> [String: Any] {
        let data = try XCTUnwrap(DeveloperToken.decodeBase64URL(String(part)))
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    func testASignedTokenCarriesApplesClaimsAndVerifiesWithOpenSSL() async throws {
        let key = try makeKey("AuthKey_ABC123DEFG.p8", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256")
        let publicKey = directory.appendingPathComponent("public.pem")
        XCTAssertEqual(try openssl("pkey", "-in", key.path, "-pubout", "-out", publicKey.path).code, 0)
        try writeSettings(["keyFile": key.path, "keyID": "ABC123DEFG", "teamID": "TEAM123456", "origin": ["https://example.com"]])

        let before = Int(Date().timeIntervalSince1970)
        let token = try await DefaultMusicTokenProvider().developerToken(options: [])
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3, token)
        let header = try json(parts[0])
        XCTAssertEqual(header["alg"] as? String, "ES256")
        XCTAssertEqual(header["kid"] as? String, "ABC123DEFG")
        let claims = try json(parts[1])
        XCTAssertEqual(claims["iss"] as? String, "TEAM123456")
        let issued = try XCTUnwrap(claims["iat"] as? Int)
        let expires = try XCTUnwrap(claims["exp"] as? Int)
        XCTAssertGreaterThanOrEqual(issued, before)
        XCTAssertEqual(expires - issued, 12 * 3600, "12 hours (Apple allows at most 6 months)")
        XCTAssertEqual(claims["origin"] as? [String], ["https://example.com"])

        let signature = try XCTUnwrap(DeveloperToken.decodeBase64URL(String(parts[2])))
        XCTAssertEqual(signature.count, 64, "r and s, 32 bytes each")
        let signatureFile = directory.appendingPathComponent("signature.der")
        try der(signature).write(to: signatureFile)
        let input = directory.appendingPathComponent("input")
        try Data("\(parts[0]).\(parts[1])".utf8).write(to: input)
        let verified = try openssl("dgst", "-sha256", "-verify", publicKey.path, "-signature", signatureFile.path, input.path)
        XCTAssertEqual(verified.code, 0, verified.out)
        XCTAssertTrue(verified.out.contains("Verified OK"), verified.out)

        try Data("\(parts[0]).\(parts[1])x".utf8).write(to: input)
        let tampered = try openssl("dgst", "-sha256", "-verify", publicKey.path, "-signature", signatureFile.path, input.path)
        XCTAssertNotEqual(tampered.code, 0, "a changed message does not verify: \(tampered.out)")
    }

    func testTheTokenIsKeptUntilTheCacheIsIgnoredAndAReadyTokenIsUsedAsItIs() async throws {
        let key = try makeKey("key.p8", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256")
        try writeSettings(["keyFile": key.path, "keyID": "ABC123DEFG", "teamID": "TEAM123456"])
        let provider = DefaultMusicTokenProvider()
        let first = try await provider.developerToken(options: [])
        let again = try await provider.developerToken(options: [])
        XCTAssertEqual(again, first, "cached")
        let fresh = try await provider.developerToken(options: .ignoreCache)
        XCTAssertNotEqual(fresh, first, "signed again (ES256 signatures differ each time)")

        try writeSettings(["developerToken": first])
        let ready = try await DefaultMusicTokenProvider().developerToken(options: [])
        XCTAssertEqual(ready, first)
    }

    func testMissingOrWrongSettingsAreNamed() async throws {
        let none = try await settingsError([:])
        XCTAssertTrue(none.setting.hasPrefix("MUSICKIT_DEVELOPER_TOKEN"), none.description)
        XCTAssertTrue(none.reason.contains("MUSICKIT_DEVELOPER_KEY_FILE"), none.description)

        let key = try makeKey("key.p8", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256")
        let noKeyID = try await settingsError(["keyFile": key.path, "teamID": "TEAM123456"])
        XCTAssertTrue(noKeyID.setting.hasPrefix("MUSICKIT_KEY_ID"), noKeyID.description)
        let badTeam = try await settingsError(["keyFile": key.path, "keyID": "ABC123DEFG", "teamID": "my team"])
        XCTAssertTrue(badTeam.setting.hasPrefix("MUSICKIT_TEAM_ID"), badTeam.description)
        XCTAssertTrue(badTeam.reason.contains("\"my team\" is not"), badTeam.description)

        let valid = ["keyID": "ABC123DEFG", "teamID": "TEAM123456"]
        let missing = try await settingsError(valid.merging(["keyFile": "/nonexistent/AuthKey.p8"]) { $1 })
        XCTAssertTrue(missing.setting.hasPrefix("MUSICKIT_DEVELOPER_KEY_FILE"), missing.description)
        XCTAssertTrue(missing.reason.contains("cannot read /nonexistent/AuthKey.p8"), missing.description)

        let garbage = directory.appendingPathComponent("garbage.p8")
        try Data("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n".utf8).write(to: garbage)
        let malformed = try await settingsError(valid.merging(["keyFile": garbage.path]) { $1 })
        XCTAssertTrue(malformed.reason.contains("not a PEM private key"), malformed.description)

        let rsa = try makeKey("rsa.p8", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048")
        let wrongType = try await settingsError(valid.merging(["keyFile": rsa.path]) { $1 })
        XCTAssertTrue(wrongType.reason.contains("not an EC key"), wrongType.description)

        let p384 = try makeKey("p384.p8", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384")
        let wrongCurve = try await settingsError(valid.merging(["keyFile": p384.path]) { $1 })
        XCTAssertTrue(wrongCurve.reason.contains("another curve"), wrongCurve.description)

        let notAToken = try await settingsError(["developerToken": "abc"])
        XCTAssertTrue(notAToken.setting.hasPrefix("MUSICKIT_DEVELOPER_TOKEN"), notAToken.description)
        XCTAssertFalse(notAToken.description.contains(key.path), "no key material or paths of other settings")
    }

    func testTheUserTokenComesFromTheSettingsOrThePersonIsNotSignedIn() async throws {
        do {
            _ = try await MusicUserTokenProvider().userToken(for: "developer", options: [])
            XCTFail("a user token without one set")
        } catch let error as MusicTokenRequestError {
            XCTAssertEqual(error, .userNotSignedIn)
            XCTAssertTrue(error.recoverySuggestion?.contains("MUSICKIT_USER_TOKEN") == true)
        }
        try writeSettings(["userToken": "user-token-value"])
        let token = try await DefaultMusicTokenProvider().userToken(for: "developer", options: [])
        XCTAssertEqual(token, "user-token-value")
        XCTAssertTrue(MusicTokenRequestOptions.ignoreCache.contains(.ignoreCache))
        XCTAssertEqual(MusicTokenRequestOptions([.ignoreCache]).rawValue, 1)
    }
}
