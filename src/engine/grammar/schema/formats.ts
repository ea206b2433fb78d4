// String formats as EBNF (the text between the quotes). date / time / date-time are written
// here: days of the month by month, February 29th in leap years only (RFC 3339). The other
// formats take xgrammar's own rules for them (see leaf-rules.ts).

const D31 = '("0" [1-9] | [12] [0-9] | "3" [01])';
const D30 = '("0" [1-9] | [12] [0-9] | "30")';
const D28 = '("0" [1-9] | "1" [0-9] | "2" [0-8])';
/** two-digit multiples of 4 */
const MUL4 = Array.from({ length: 25 }, (_, i) => JSON.stringify(String(i * 4).padStart(2, '0')));
const LEAP_YEAR = `([0-9] [0-9] (${MUL4.slice(1).join(' | ')}) | (${MUL4.join(' | ')}) "00")`;

/** rules defining `${p}date`, `${p}time`, `${p}date_time` (no quotes) */
export function dateTimeRules(p: string): string[] {
  return [
    `${p}date ::= [0-9]{4} "-" (("01" | "03" | "05" | "07" | "08" | "10" | "12") "-" ${D31} | ("04" | "06" | "09" | "11") "-" ${D30} | "02-" ${D28}) | ${LEAP_YEAR} "-02-29"`,
    `${p}time ::= ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" ([0-5] [0-9] | "60") ("." [0-9]+)? ([Zz] | [+\\-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])`,
    `${p}date_time ::= ${p}date [Tt] ${p}time`,
  ];
}

/** the formats loom enforces; any other `format` is an annotation (JSON Schema's default) and is not enforced */
export const ENFORCED_FORMATS = new Set(['date', 'time', 'date-time', 'duration', 'email', 'uuid', 'ipv4', 'ipv6', 'hostname', 'uri', 'uri-reference']);
