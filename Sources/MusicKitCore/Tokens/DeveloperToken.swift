import Foundation

/// Where the developer token comes from, read at each request for a new token.
///
/// From the environment, each overriding the same field of the settings file
/// `<config>/developer-token.json` (`{"keyFile": …, "keyID": …, "teamID": …, "origin": […],
/// "developerToken": …, "userToken": …}`):
/// - `MUSICKIT_DEVELOPER_TOKEN`: a ready developer token (used as it is);
/// - otherwise `MUSICKIT_DEVELOPER_KEY_FILE` (the `.p8` private key), `MUSICKIT_KEY_ID` (its
///   10-character ID) and `MUSICKIT_TEAM_ID` (the developer's team ID): a token is signed here;
///   `MUSICKIT_TOKEN_ORIGIN` (comma-separated) restricts it to those web origins;
/// - `MUSICKIT_USER_TOKEN`: the music user token for `/v1/me` requests.
struct MusicDeveloperTokenSettings {
    enum Source {
        case ready(String)
        case signing(Signing)
    }

    struct Signing {
        let key: ES256PrivateKey
        let keyID: String
        let teamID: String
        let origins: [String]
    }

    private let values: [String: String]
    private let origins: [String]
    private let fileURL: URL

    static let fileName = "developer-token.json"

    /// The settings now: the environment over the settings file.
    static func current(environment: [String: String] = ProcessInfo.processInfo.environment,
                        configDirectory: URL = MusicKitEnvironment.current.configDirectory)
        throws(MusicDeveloperTokenError) -> MusicDeveloperTokenSettings {
        let fileURL = configDirectory.appendingPathComponent(fileName)
        var values: [String: String] = [:]
        var origins: [String] = []
        if let data = try? Data(contentsOf: fileURL) {
            guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw MusicDeveloperTokenError(setting: fileURL.path, reason: "not a JSON object")
            }
            for (field, value) in object {
                if field == "origin" {
                    guard let list = value as? [String] else {
                        throw MusicDeveloperTokenError(setting: "\"origin\" in \(fileURL.path)", reason: "not a list of strings")
                    }
                    origins = list
                } else if Field(rawValue: field) != nil {
                    guard let text = value as? String else {
                        throw MusicDeveloperTokenError(setting: "\"\(field)\" in \(fileURL.path)", reason: "not a string")
                    }
                    values[field] = text
                }
            }
        }
        for field in Field.allCases {
            if let value = environment[field.variable], !value.isEmpty { values[field.rawValue] = value }
        }
        if let value = environment["MUSICKIT_TOKEN_ORIGIN"], !value.isEmpty {
            origins = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        return MusicDeveloperTokenSettings(values: values, origins: origins, fileURL: fileURL)
    }

    private enum Field: String, CaseIterable {
        case developerToken, keyFile, keyID, teamID, userToken

        var variable: String {
            switch self {
            case .developerToken: "MUSICKIT_DEVELOPER_TOKEN"
            case .keyFile: "MUSICKIT_DEVELOPER_KEY_FILE"
            case .keyID: "MUSICKIT_KEY_ID"
            case .teamID: "MUSICKIT_TEAM_ID"
            case .userToken: "MUSICKIT_USER_TOKEN"
            }
        }
    }

    /// How an error names a setting: the variable, or the file's field.
    private func name(_ field: Field) -> String {
        "\(field.variable) (or \"\(field.rawValue)\" in \(fileURL.path))"
    }

    var userToken: String? { values[Field.userToken.rawValue] }

    /// A developer token is set, or a key to sign one (whether they are usable is `source`'s question).
    var isConfigured: Bool { values[Field.developerToken.rawValue] != nil || values[Field.keyFile.rawValue] != nil }

    var source: Source {
        get throws(MusicDeveloperTokenError) {
            if let ready = values[Field.developerToken.rawValue] {
                guard DeveloperToken.expiry(of: ready) != nil else {
                    throw MusicDeveloperTokenError(setting: name(.developerToken),
                                                   reason: "not a developer token (a JWT: three base64url parts separated by dots, with an \"exp\" claim)")
                }
                return .ready(ready)
            }
            guard let keyPath = values[Field.keyFile.rawValue] else {
                throw MusicDeveloperTokenError(
                    setting: name(.developerToken),
                    reason: "no developer token: set it, or set MUSICKIT_DEVELOPER_KEY_FILE, MUSICKIT_KEY_ID and MUSICKIT_TEAM_ID "
                        + "(the .p8 key, its ID and your team ID from developer.apple.com) to sign one")
            }
            let keyID = try identifier(.keyID, what: "the 10-character ID of the MusicKit key (developer.apple.com, Keys)")
            let teamID = try identifier(.teamID, what: "your 10-character team ID (developer.apple.com, Membership)")
            let pem: Data
            do {
                pem = try Data(contentsOf: URL(fileURLWithPath: keyPath))
            } catch {
                throw MusicDeveloperTokenError(setting: name(.keyFile), reason: "cannot read \(keyPath): \((error as NSError).localizedDescription)")
            }
            do throws(ES256PrivateKey.Failure) {
                let key = try ES256PrivateKey(pem: pem)
                return .signing(Signing(key: key, keyID: keyID, teamID: teamID, origins: origins))
            } catch {
                throw MusicDeveloperTokenError(setting: name(.keyFile), reason: "\(keyPath): \(error.description)")
            }
        }
    }

    private func identifier(_ field: Field, what: String) throws(MusicDeveloperTokenError) -> String {
        guard let value = values[field.rawValue] else {
            throw MusicDeveloperTokenError(setting: name(field), reason: "not set: \(what)")
        }
        guard value.count == 10, value.allSatisfy({ ($0.isASCII && $0.isUppercase) || $0.isNumber }) else {
            throw MusicDeveloperTokenError(setting: name(field), reason: "\"\(value)\" is not \(what)")
        }
        return value
    }
}

/// Apple Music developer tokens: JWTs signed with ES256.
enum DeveloperToken {
    /// How long a token made here is valid (Apple allows up to 6 months).
    static let lifetime: TimeInterval = 12 * 3600
    /// A cached token is renewed this long before it expires.
    static let renewalMargin: TimeInterval = 600

    /// `header.claims.signature`: header `alg` ES256 and `kid`; claims `iss` (the team), `iat`,
    /// `exp`, and `origin` when set.
    static func sign(_ signing: MusicDeveloperTokenSettings.Signing, issuedAt: Date, expiresAt: Date) throws(MusicDeveloperTokenError) -> String {
        var claims: [String: Any] = ["iss": signing.teamID, "iat": Int(issuedAt.timeIntervalSince1970),
                                     "exp": Int(expiresAt.timeIntervalSince1970)]
        if !signing.origins.isEmpty { claims["origin"] = signing.origins }
        let header: [String: Any] = ["alg": "ES256", "kid": signing.keyID]
        guard let headerJSON = try? JSONSerialization.data(withJSONObject: header, options: [.sortedKeys]),
              let claimsJSON = try? JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]) else {
            throw MusicDeveloperTokenError(setting: "MUSICKIT_TOKEN_ORIGIN", reason: "the claims could not be written as JSON")
        }
        let signingInput = base64URL(headerJSON) + "." + base64URL(claimsJSON)
        do throws(ES256PrivateKey.Failure) {
            return signingInput + "." + base64URL(try signing.key.sign(Data(signingInput.utf8)))
        } catch {
            throw MusicDeveloperTokenError(setting: "MUSICKIT_DEVELOPER_KEY_FILE", reason: "signing failed: \(error.description)")
        }
    }

    /// A token's `exp` claim, or nil when it is not a JWT with one.
    static func expiry(of token: String) -> Date? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let claims = decodeBase64URL(String(parts[1])),
              let object = try? JSONSerialization.jsonObject(with: claims) as? [String: Any],
              let exp = object["exp"] as? NSNumber else { return nil }
        return Date(timeIntervalSince1970: exp.doubleValue)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decodeBase64URL(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
