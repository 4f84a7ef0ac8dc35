// The module apps import: all of MusicKitCore, Foundation as on Apple platforms (where
// `import MusicKit` brings Foundation), and what names Foundation's URL-loading types.
//
// `MusicDataRequest(urlRequest:)` and `MusicDataResponse.urlResponse` are Foundation's
// `URLRequest` and `HTTPURLResponse`, as on Apple platforms. On Linux those live in
// FoundationNetworking, which links libcurl and ~25 more libraries, loaded at every start of a
// program that links it. So only this module links it: the `musickit` tool and musickitd import
// MusicKitCore, whose requests the engine's own HTTP client sends (HTTPMessages.swift), and are
// timed from their start without it.
@_exported import Foundation
#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif
@_exported import MusicKitCore

extension MusicDataRequest {
    /// The request the app gave (`init(urlRequest:)`, the only way a `MusicDataRequest` is made).
    public var urlRequest: URLRequest {
        appRequest.value.base as! URLRequest
    }

    /// A request for `urlRequest`. What is sent: its URL, method, header fields, body and
    /// `timeoutInterval` (for connecting and each wait); its cache policy is not used
    /// (MusicKit's requests always load) and a body stream is not sent.
    public init(urlRequest: URLRequest) {
        var sent = HTTPRequest(url: urlRequest.url, timeoutInterval: urlRequest.timeoutInterval)
        sent.httpMethod = urlRequest.httpMethod
        sent.allHTTPHeaderFields = urlRequest.allHTTPHeaderFields
        sent.httpBody = urlRequest.httpBody
        self.init(httpRequest: sent, appRequest: AppRequest(urlRequest))
    }
}

extension MusicDataResponse {
    /// The response's status code and header fields.
    public var urlResponse: HTTPURLResponse {
        // HTTPClient read it from a request with a URL, and its status was checked to be in
        // 100...999, so Foundation's initializer cannot fail.
        HTTPURLResponse(url: httpResponse.url, statusCode: httpResponse.statusCode,
                        httpVersion: "HTTP/1.1", headerFields: httpResponse.headerFields)!
    }
}
