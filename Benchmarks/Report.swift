import AudioMeasurement
import Foundation

/// One row of the benchmark table.
struct Row {
    let name: String
    let unit: String
    let summary: Summary?
    let note: String

    init(_ name: String, unit: String, values: [Double], note: String = "") {
        self.name = name
        self.unit = unit
        summary = Summary(values)
        self.note = note
    }
}

/// Collects rows and prints them as a Markdown table.
final class Report {
    private(set) var rows: [Row] = []

    func add(_ row: Row) {
        rows.append(row)
        let values = row.summary.map { "median \(format($0.median)) \(row.unit) (n=\($0.count))" } ?? "no value"
        FileHandle.standardError.write("  \(row.name): \(values)\(row.note.isEmpty ? "" : " — \(row.note)")\n".data(using: .utf8)!)
    }

    func median(_ name: String) -> Double? { rows.first { $0.name == name }?.summary?.median }

    func markdown() -> String {
        var lines = ["| measurement | median | min | max | unit | runs | note |", "|---|---:|---:|---:|---|---:|---|"]
        for row in rows {
            if let summary = row.summary {
                lines.append("| \(row.name) | \(format(summary.median)) | \(format(summary.minimum)) | \(format(summary.maximum)) | \(row.unit) | \(summary.count) | \(row.note) |")
            } else {
                lines.append("| \(row.name) | – | – | – | \(row.unit) | 0 | \(row.note) |")
            }
        }
        return lines.joined(separator: "\n")
    }
}

func format(_ value: Double) -> String {
    if value.isNaN { return "–" }
    if abs(value) >= 1_000 { return String(format: "%.0f", value) }
    if abs(value) >= 100 { return String(format: "%.1f", value) }
    if abs(value) >= 10 { return String(format: "%.2f", value) }
    return String(format: "%.3f", value)
}

/// Progress on stderr, so stdout holds only the table.
func progress(_ text: String) {
    FileHandle.standardError.write((text + "\n").data(using: .utf8)!)
}

/// Milliseconds between two CLOCK_MONOTONIC readings.
func milliseconds(from start: UInt64, to end: UInt64) -> Double {
    Double(Int64(bitPattern: end &- start)) / 1e6
}
