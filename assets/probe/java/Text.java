package probe;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** String handling for the codescope probe corpus. */
public final class Text {
    private Text() {}

    public static Map<String, Integer> wordCount(String text) {
        Map<String, Integer> counts = new HashMap<>();
        for (String word : text.toLowerCase().split("\\s+")) {
            if (!word.isEmpty()) {
                counts.merge(word, 1, Integer::sum);
            }
        }
        return counts;
    }

    public static String reverseWords(String sentence) {
        String[] words = sentence.trim().split(" ");
        StringBuilder sb = new StringBuilder();
        for (int i = words.length - 1; i >= 0; i--) {
            sb.append(words[i]);
            if (i > 0) {
                sb.append(' ');
            }
        }
        return sb.toString();
    }

    public static boolean isPalindrome(String s) {
        int i = 0, j = s.length() - 1;
        while (i < j) {
            if (s.charAt(i) != s.charAt(j)) {
                return false;
            }
            i++;
            j--;
        }
        return true;
    }

    public static int vowelCount(String text) {
        int count = 0;
        for (char c : text.toCharArray()) {
            if ("aeiouAEIOU".indexOf(c) >= 0) {
                count++;
            }
        }
        return count;
    }

    public static String snakeToCamel(String name) {
        StringBuilder sb = new StringBuilder();
        boolean upper = false;
        for (char c : name.toCharArray()) {
            if (c == '_') {
                upper = true;
            } else if (upper) {
                sb.append(Character.toUpperCase(c));
                upper = false;
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }

    public static String camelToSnake(String name) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (Character.isUpperCase(c) && i > 0) {
                sb.append('_');
            }
            sb.append(Character.toLowerCase(c));
        }
        return sb.toString();
    }

    public static String truncate(String text, int width) {
        if (text.length() <= width) {
            return text;
        }
        return text.substring(0, width - 3) + "...";
    }

    public static String padLeft(String text, int width, char fill) {
        StringBuilder sb = new StringBuilder();
        for (int i = text.length(); i < width; i++) {
            sb.append(fill);
        }
        return sb.append(text).toString();
    }

    public static String caesar(String text, int shift) {
        StringBuilder out = new StringBuilder();
        for (char c : text.toCharArray()) {
            if (Character.isLetter(c)) {
                char base = Character.isLowerCase(c) ? 'a' : 'A';
                out.append((char) ((c - base + shift + 26) % 26 + base));
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    public static List<String> extractEmails(String text) {
        List<String> found = new ArrayList<>();
        Matcher m = Pattern.compile("[\\w.]+@[\\w.]+").matcher(text);
        while (m.find()) {
            found.add(m.group());
        }
        return found;
    }

    public static String slugify(String title) {
        String slug = title.trim().toLowerCase().replaceAll("[^a-z0-9]+", "-");
        return slug.replaceAll("^-|-$", "");
    }

    public static Map<String, String> parseKeyValues(String line) {
        Map<String, String> pairs = new HashMap<>();
        for (String item : line.split(";")) {
            int eq = item.indexOf('=');
            if (eq < 0) {
                continue;
            }
            pairs.put(item.substring(0, eq).trim(), item.substring(eq + 1).trim());
        }
        return pairs;
    }

    public static String longestWord(String text) {
        String best = "";
        for (String word : text.split("\\s+")) {
            if (word.length() > best.length()) {
                best = word;
            }
        }
        return best;
    }

    public static boolean isAnagram(String a, String b) {
        int[] counts = new int[26];
        for (char c : a.toLowerCase().toCharArray()) {
            if (Character.isLetter(c)) counts[c - 'a']++;
        }
        for (char c : b.toLowerCase().toCharArray()) {
            if (Character.isLetter(c)) counts[c - 'a']--;
        }
        for (int n : counts) {
            if (n != 0) return false;
        }
        return true;
    }

    public static String compress(String text) {
        if (text.isEmpty()) {
            return "";
        }
        StringBuilder out = new StringBuilder();
        char prev = text.charAt(0);
        int run = 1;
        for (int i = 1; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == prev) {
                run++;
            } else {
                out.append(prev).append(run);
                prev = c;
                run = 1;
            }
        }
        return out.append(prev).append(run).toString();
    }

    public static List<String> wrap(String text, int width) {
        List<String> lines = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String word : text.split(" ")) {
            if (current.length() > 0 && current.length() + 1 + word.length() > width) {
                lines.add(current.toString());
                current.setLength(0);
            }
            if (current.length() > 0) {
                current.append(' ');
            }
            current.append(word);
        }
        if (current.length() > 0) {
            lines.add(current.toString());
        }
        return lines;
    }

    public static String initials(String fullName) {
        StringBuilder sb = new StringBuilder();
        for (String part : fullName.split(" ")) {
            if (!part.isEmpty()) {
                sb.append(Character.toUpperCase(part.charAt(0)));
            }
        }
        return sb.toString();
    }

    public static String maskSecret(String secret, int visible) {
        int hidden = secret.length() - visible;
        if (hidden <= 0) {
            return secret;
        }
        return "*".repeat(hidden) + secret.substring(hidden);
    }

    public static String template(String text, Map<String, Object> values) {
        for (Map.Entry<String, Object> e : values.entrySet()) {
            text = text.replace("{" + e.getKey() + "}", String.valueOf(e.getValue()));
        }
        return text;
    }

    public static String commonPrefix(String[] words) {
        if (words.length == 0) {
            return "";
        }
        String prefix = words[0];
        for (String w : words) {
            while (!w.startsWith(prefix)) {
                prefix = prefix.substring(0, prefix.length() - 1);
            }
        }
        return prefix;
    }

    public static Integer parseIntOrNull(String text) {
        try {
            return Integer.parseInt(text.trim());
        } catch (NumberFormatException | NullPointerException e) {
            return null;
        }
    }

    public static String hex(byte[] data) {
        StringBuilder sb = new StringBuilder();
        for (byte b : data) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }

    public static int countLines(String text) {
        int n = 0;
        for (String line : text.split("\n")) {
            if (!line.isBlank()) {
                n++;
            }
        }
        return n;
    }

    public static String repeatJoin(String s, int times, String sep) {
        String[] parts = new String[times];
        java.util.Arrays.fill(parts, s);
        return String.join(sep, parts);
    }

    public static char mostFrequentChar(String text) {
        int[] counts = new int[128];
        char best = ' ';
        for (char c : text.toCharArray()) {
            if (c < 128 && c != ' ' && ++counts[c] > counts[best]) {
                best = c;
            }
        }
        return best;
    }

    public static String textBlock() {
        String block = """
            select name
            from users
            """;
        return block.strip();
    }
}
