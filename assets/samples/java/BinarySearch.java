import java.util.Arrays;

public class BinarySearch {
    /** Returns the index of target in the sorted array, or -1. */
    public static int search(int[] items, int target) {
        int lo = 0;
        int hi = items.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (items[mid] == target) {
                return mid;
            } else if (items[mid] < target) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return -1;
    }

    // Leftmost position where target could be inserted.
    public static int insertionPoint(int[] items, int target) {
        int lo = 0, hi = items.length;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (items[mid] < target) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    public static void main(String[] args) {
        int[] data = {7, 3, 9, 1, 5};
        Arrays.sort(data);
        for (int needle : new int[] {5, 6}) {
            System.out.println(needle + ": " + search(data, needle) + " / " + insertionPoint(data, needle));
        }
    }
}
